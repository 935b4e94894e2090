"""Speculative decoding: a drafter proposes K tokens after each step, the next step verifies them
with the target model, and the accepted prefix (plus one bonus token) is kept.

vLLM's `--speculative-config '{"method": ..., "num_speculative_tokens": K}'`. Acceptance is drawn
per request and per draft position, deterministically for a seed (the draw for a request's n-th
verification depends only on the seed, the request id and n), so runs are repeatable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..bounds import MAX_SEED, Bound, setting, settings_of
from ..errors import ConfigError, shown
from ..files import parse_json

SPEC_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model")
# Methods whose drafter runs its own forward pass and writes KV past the verified tokens: vLLM
# reserves `num_speculative_tokens` lookahead slots for them (`VllmConfig.num_lookahead_tokens`).
LOOKAHEAD_METHODS = ("eagle", "eagle3", "mtp", "draft_model")
# Drafters that read the target model's hidden states (vLLM's `use_eagle()`, less DFlash/DSpark).
EAGLE_METHODS = ("eagle", "eagle3", "mtp")
# vLLM speculative-config keys servescope accepts but does not model (the drafter's own settings).
IGNORED_VLLM_KEYS = ("model", "prompt_lookup_max", "prompt_lookup_min", "draft_tensor_parallel_size")

# Default probability of accepting draft position i (given positions before it were accepted).
# MTP: DeepSeek-V3 Technical Report (arXiv:2412.19437, sec. 5.4.3): "the acceptance rate of the
# second token prediction ranges between 85% and 90%"; we take the low end for every position.
# EAGLE/EAGLE-3 and draft models: the EAGLE papers (arXiv:2401.15077, 2503.01840) report per-position
# acceptance of roughly 0.7-0.8 on MT-bench chat; we take 0.75, falling by 0.05 a position.
# N-gram (prompt lookup) depends entirely on how repetitive the text is; 0.5 is a placeholder.
DEFAULT_ACCEPTANCE = {
    "mtp": lambda i: 0.85,
    "eagle": lambda i: max(0.75 - 0.05 * i, 0.3),
    "eagle3": lambda i: max(0.75 - 0.05 * i, 0.3),
    "draft_model": lambda i: max(0.75 - 0.05 * i, 0.3),
    "ngram": lambda i: 0.5,
}


@dataclass(frozen=True)
class SpeculativeConfig:
    """vLLM's speculative config, plus servescope's acceptance model (rate per position, seed).
    Each setting is declared once (`bounds.setting`): the web's model is made from it."""

    method: str = setting("eagle", "drafter", choices=SPEC_METHODS)
    num_speculative_tokens: int = setting(3, "draft tokens per step (K)",
                                          bound=Bound(1, 16, message="must be an integer from 1 to 16, got {value}"))
    # P(accept draft position i); empty: the method's published default (DEFAULT_ACCEPTANCE).
    acceptance_rate: tuple[float, ...] = setting(
        (), "P(accept) per draft position (empty: published default)", length=Bound(0, 16),
        bound=Bound(0, 1, integer=False, message="each rate must be a number from 0 to 1"))
    acceptance_seed: int = setting(0, "seed of the acceptance draws", bound=Bound(0, MAX_SEED))
    # vLLM's own switches for EAGLE/MTP under prefix caching (see eagle_hit_rule.py): keep the last
    # block of a hit (0.30+), and keep 0.33's legacy hashes, which brings the drop back.
    disable_eagle_block_drop: bool = setting(False, "EAGLE/MTP: reuse the last block of a prefix-cache hit (0.30+)")
    disable_lookahead_block_hashes: bool = setting(False, "EAGLE/MTP: legacy block hashes, so the drop returns (0.33)")

    def __post_init__(self) -> None:
        where = "speculative_config"
        declared = SPEC_SETTINGS
        if self.method not in declared["method"].choices:
            raise ConfigError(f"{where}.method", f"unknown method {self.method!r}; expected one of {list(SPEC_METHODS)}")
        k = self.num_speculative_tokens
        declared["num_speculative_tokens"].bound.check(f"{where}.num_speculative_tokens", k)
        if not isinstance(self.acceptance_rate, (list, tuple)):
            raise ConfigError(f"{where}.acceptance_rate", f"must be a list of rates, got {shown(self.acceptance_rate)}")
        rates = tuple(self.acceptance_rate)
        if rates and len(rates) != k:
            raise ConfigError(f"{where}.acceptance_rate", f"needs one rate per draft position ({k}), got {len(rates)}")
        for rate in rates:
            declared["acceptance_rate"].bound.check(f"{where}.acceptance_rate", rate)
        object.__setattr__(self, "acceptance_rate", rates or tuple(DEFAULT_ACCEPTANCE[self.method](i) for i in range(k)))
        declared["acceptance_seed"].bound.check(f"{where}.acceptance_seed", self.acceptance_seed)
        for name in ("disable_eagle_block_drop", "disable_lookahead_block_hashes"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{where}.{name}", f"must be true or false, got {shown(getattr(self, name))}")

    @property
    def num_lookahead_tokens(self) -> int:
        return self.num_speculative_tokens if self.method in LOOKAHEAD_METHODS else 0

    @property
    def needs_eagle_block_drop(self) -> bool:
        """Whether the drafter builds a position's draft KV from its hidden state and the next token
        (EAGLE, EAGLE-3, MTP: vLLM's `SpeculativeConfig.needs_eagle_block_drop`), so a prefix-cache
        hit must recompute the block before the token where the hit ends."""
        return self.method in EAGLE_METHODS

    @classmethod
    def from_json(cls, value: str | dict) -> "SpeculativeConfig":
        """From vLLM's JSON (`--speculative-config`), with servescope's acceptance keys allowed."""
        if isinstance(value, str):
            value = parse_json(value, "speculative_config")
        if not isinstance(value, dict):
            raise ConfigError("speculative_config", "must be a JSON object")
        known = set(SPEC_SETTINGS)
        for key in value:
            if key not in known and key not in IGNORED_VLLM_KEYS:
                raise ConfigError(f"speculative_config.{key}", "unknown setting")
        if "num_speculative_tokens" not in value:
            raise ConfigError("speculative_config.num_speculative_tokens", "missing")
        return cls(**{k: v for k, v in value.items() if k in known})


SPEC_SETTINGS = settings_of(SpeculativeConfig)


class AcceptanceModel:
    """How many of a request's drafts the target model accepts, position by position."""

    def __init__(self, config: SpeculativeConfig):
        self.rates = config.acceptance_rate
        self.seed = config.acceptance_seed
        self.num_verifications: dict[str, int] = {}

    def num_accepted(self, request_id: str, num_drafts: int) -> int:
        index = self.num_verifications.get(request_id, 0)
        self.num_verifications[request_id] = index + 1
        rng = random.Random(f"{self.seed}:{request_id}:{index}")
        accepted = 0
        while accepted < num_drafts and rng.random() < self.rates[accepted]:
            accepted += 1
        return accepted


@dataclass
class SpecDecodeStats:
    """vLLM's spec-decode counters (`vllm:spec_decode_num_drafts`, ...)."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list[int] = field(default_factory=list)

    def observe(self, num_draft_tokens: int, num_accepted: int) -> None:
        self.num_drafts += 1
        self.num_draft_tokens += num_draft_tokens
        self.num_accepted_tokens += num_accepted
        per_pos = self.num_accepted_tokens_per_pos
        per_pos.extend([0] * (num_draft_tokens - len(per_pos)))
        for position in range(num_accepted):
            per_pos[position] += 1

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens per verification step: the bonus token plus the accepted drafts."""
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else 0.0

    def report(self) -> dict:
        return {
            "spec_decode_num_drafts": self.num_drafts,
            "spec_decode_num_draft_tokens": self.num_draft_tokens,
            "spec_decode_num_accepted_tokens": self.num_accepted_tokens,
            "spec_decode_num_accepted_tokens_per_pos": list(self.num_accepted_tokens_per_pos),
            "spec_decode_mean_acceptance_length": self.mean_acceptance_length,
        }
