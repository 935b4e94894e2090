"""When a served request's stand-in model would sample its end-of-sequence token.

A real model stops when it samples EOS; a stand-in has no logits, so each request's natural length
is drawn from the scenario's output-length distribution (`WorkloadConfig`: ShareGPT's by default),
seeded by the workload's seed and the request's index: the same run of requests stops at the same
lengths on every run, and a replay of its trace needs no seed at all (the trace holds the lengths).
"""

from __future__ import annotations

import random

from .workload import WorkloadConfig, draw_length


class StandInEOS:
    def __init__(self, config: WorkloadConfig):
        self.seed = config.seed
        self.distribution = config.length_distribution()

    def natural_length(self, request_index: int) -> int:
        """Output tokens up to and including EOS for the request with this index (at least 1)."""
        dist = self.distribution
        rng = random.Random(self.seed * 1_000_003 + request_index)
        return max(1, draw_length(rng, dist.kind, dist.output_mean, dist.output_sigma, dist.output_range))

    def output_length(self, request_index: int, max_tokens: int, ignore_eos: bool) -> tuple[int, str]:
        """(tokens the request generates, vLLM's finish_reason): `stop` when EOS comes first (it is
        the last of the tokens, and counts as one, as in vLLM), `length` at max_tokens."""
        natural = self.natural_length(request_index)
        return (natural, "stop") if natural <= max_tokens and not ignore_eos else (max_tokens, "length")
