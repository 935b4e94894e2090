"""Workloads: which requests arrive when, with how long a prompt and how many output tokens.

Every generator draws from its own `random.Random(seed)`, so a workload is a pure function of
its parameters and seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .errors import ConfigError

# Synthetic prompts draw token ids from a range this large, like a real tokenizer's vocabulary.
VOCAB_SIZE = 32000


@dataclass(frozen=True)
class RequestSpec:
    """A request before it reaches the engine."""

    request_id: str
    arrival_time: float
    prompt_token_ids: tuple[int, ...] | range
    max_tokens: int
    priority: int = 0


def unique_prompt(index: int, length: int) -> range:
    """A prompt that shares no block with any other `unique_prompt`, at no memory cost.

    Its token ids run from a per-request offset past the vocabulary, so no two requests (and no
    shared prefix drawn from the vocabulary) can produce the same block hash.
    """
    start = VOCAB_SIZE + index * 1_000_003
    return range(start, start + length)


def poisson_arrivals(rng: random.Random, num_requests: int, rate_per_s: float) -> list[float]:
    if rate_per_s == math.inf:
        return [0.0] * num_requests
    clock, times = 0.0, []
    for _ in range(num_requests):
        clock += rng.expovariate(rate_per_s)
        times.append(clock)
    return times


def lognormal_length(rng: random.Random, mean: float, sigma: float, low: int, high: int) -> int:
    """A lognormal draw with the given arithmetic mean, clipped to [low, high]."""
    mu = math.log(mean) - sigma * sigma / 2
    return max(low, min(high, int(round(rng.lognormvariate(mu, sigma)))))


def synthetic_workload(
    num_requests: int,
    arrival_rate: float,
    prompt_mean: float,
    output_mean: float,
    seed: int = 0,
    sigma: float = 0.6,
    max_prompt_len: int = 4096,
    max_output_len: int = 2048,
    shared_prefix_len: int = 0,
    num_shared_prefixes: int = 1,
) -> list[RequestSpec]:
    """Poisson arrivals with lognormal prompt and output lengths; optionally each prompt starts
    with one of `num_shared_prefixes` system prompts of `shared_prefix_len` tokens."""
    if num_requests <= 0:
        raise ConfigError("num_requests", f"must be positive, got {num_requests}")
    if not arrival_rate > 0:
        raise ConfigError("arrival_rate", f"must be > 0 requests/s (inf = all at once), got {arrival_rate}")
    rng = random.Random(seed)
    prefixes = [tuple(rng.randrange(VOCAB_SIZE) for _ in range(shared_prefix_len)) for _ in range(num_shared_prefixes)]
    arrivals = poisson_arrivals(rng, num_requests, arrival_rate)
    specs = []
    for index, arrival in enumerate(arrivals):
        prompt_len = lognormal_length(rng, prompt_mean, sigma, 1, max_prompt_len - shared_prefix_len)
        output_len = lognormal_length(rng, output_mean, sigma, 1, max_output_len)
        prompt: tuple[int, ...] | range = unique_prompt(index, prompt_len)
        if shared_prefix_len:
            prompt = prefixes[rng.randrange(num_shared_prefixes)] + tuple(prompt)
        specs.append(RequestSpec(f"req-{index:05d}", arrival, prompt, output_len))
    return specs
