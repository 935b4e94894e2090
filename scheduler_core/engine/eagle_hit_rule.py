"""What an EAGLE/MTP drafter does to a prefix-cache hit, release by release.

An EAGLE-style drafter builds the draft KV at a position from the target model's hidden state there
and the token after it. A cached block's last position was written with the token that followed it
in the request that computed it, which a new request may not share, and a hit hands out no hidden
states at all. vLLM has answered this three ways:

- the drop (every release before 0.33 by default, the v0.18.0 gotcha of vLLM issue #38182): the
  last matched block of every hit is recomputed, so a hit of n blocks gives n - 1;
- `disable_eagle_block_drop` (0.30+): the user may opt out and keep the whole hit;
- lookahead hashes (0.33, `VllmConfig.num_hash_lookahead_tokens`): a block's hash also covers the
  token after it, so a hit proves the boundary token and needs no drop (a block whose next token is
  not known yet is not cached until it is); with a KV connector configured the legacy hashes, and
  so the drop, come back.
"""

from __future__ import annotations

from dataclasses import dataclass

# Why a hit lost its last block, as the decision trace and the KV events name it.
RULE_EAGLE_DROP = "eagle_block_drop"
RULE_EAGLE_DROP_CONNECTOR = "eagle_block_drop_kv_connector"


@dataclass(frozen=True)
class EagleHitRule:
    """How prefix-cache hits are cut for a drafter: drop the last matched block (and why), and how
    many tokens after each block its hash covers."""

    drop_rule: str | None = None  # None: hits are kept whole
    num_hash_lookahead_tokens: int = 0

    @property
    def drops_last_block(self) -> bool:
        return self.drop_rule is not None


NO_EAGLE = EagleHitRule()


def eagle_hit_rule(config) -> EagleHitRule:
    """The rule for an `EngineConfig`: its speculative config, prefix caching, KV connector and
    release switches (`VllmCompat.eagle_block_drop_opt_out`, `lookahead_block_hashes`)."""
    spec, compat = config.speculative_config, config.compat
    if spec is None or not spec.needs_eagle_block_drop or not config.enable_prefix_caching:
        return NO_EAGLE
    if spec.disable_eagle_block_drop and compat.eagle_block_drop_opt_out:
        return NO_EAGLE
    if compat.lookahead_block_hashes and not spec.disable_lookahead_block_hashes:
        if config.kv_connector:
            return EagleHitRule(RULE_EAGLE_DROP_CONNECTOR)
        # Eagle-family drafters read one token ahead (`VllmConfig.num_prefill_lookahead_tokens`).
        return EagleHitRule(None, num_hash_lookahead_tokens=1)
    return EagleHitRule(RULE_EAGLE_DROP)
