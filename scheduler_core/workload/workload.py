"""Workloads: which requests arrive when, with how long a prompt and how many output tokens.

A `WorkloadConfig` describes a synthetic workload (arrival process, length distributions,
shared system prompts); `build_workload` turns it into `RequestSpec`s with its own
`random.Random(seed)`, so a workload is a pure function of its parameters and seed. Traces are
read by `scheduler_core.workload.traces`.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from ..bounds import (
    MAX_REQUESTS,
    MAX_SHARED_PREFIX_TOKENS,
    MAX_TOKENS_PER_CONTEXT,
    Bound,
    bounds_of,
    check_all,
    setting,
    settings_of,
)
from ..engine.prompt import Prompt
from ..errors import ConfigError

# Synthetic prompts draw token ids from a range this large, like a real tokenizer's vocabulary.
VOCAB_SIZE = 32000
ARRIVALS = ("poisson", "gamma", "fixed")


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A request before it reaches the engine."""

    request_id: str
    arrival_time: float
    prompt_token_ids: Sequence[int]
    max_tokens: int
    priority: int = 0
    # When its client went away (simulated seconds), for a served run's trace: sim/aborts.py.
    abort_time: float | None = None


class RequestTable(Sequence):
    """A synthetic workload's requests as columns of machine numbers (about 20 bytes a request);
    each `RequestSpec`, with its compact `Prompt`, is made only when it is asked for."""

    def __init__(self, prefixes: list[array]):
        self.prefixes = prefixes or [array("i")]
        self.arrival_time = array("d")
        self.prompt_len = array("l")
        self.max_tokens = array("l")
        self.prefix_index = array("H")
        self.priority = array("b")

    def append(self, arrival_time: float, prompt_len: int, max_tokens: int, prefix_index: int, priority: int) -> None:
        self.arrival_time.append(arrival_time)
        self.prompt_len.append(prompt_len)
        self.max_tokens.append(max_tokens)
        self.prefix_index.append(prefix_index)
        self.priority.append(priority)

    def __len__(self) -> int:
        return len(self.arrival_time)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        prefix = self.prefixes[self.prefix_index[index]]
        prompt = Prompt(prefix, unique_prompt(index, 0).start, self.prompt_len[index] - len(prefix))
        return RequestSpec(f"req-{index:05d}", self.arrival_time[index], prompt, self.max_tokens[index], self.priority[index])


@dataclass(frozen=True)
class LengthDistribution:
    """Prompt and output lengths: `fixed`, `uniform` [low, high], or `lognormal` (mean, sigma)."""

    kind: str
    prompt_mean: float
    output_mean: float
    prompt_sigma: float = 0.0
    output_sigma: float = 0.0
    prompt_range: tuple[int, int] = (1, 1 << 30)
    output_range: tuple[int, int] = (1, 1 << 30)
    source: str = ""


# Named distributions from published statistics, fitted as clipped lognormals.
NAMED_LENGTHS: dict[str, LengthDistribution] = {
    # Kwon et al., "Efficient Memory Management for LLM Serving with PagedAttention" (SOSP 2023),
    # Fig. 11: ShareGPT input mean 161.31, output mean 337.99 tokens; the spread (sigma 1.0) is
    # our assumption, matching the long tail that figure shows.
    "sharegpt": LengthDistribution(
        "lognormal", 161.31, 337.99, 1.0, 1.0, (4, 4096), (4, 2048),
        source="PagedAttention paper (SOSP 2023) Fig. 11, ShareGPT as vLLM benchmarks it",
    ),
    # Same paper, same figure: Alpaca input mean 19.31, output mean 58.45 (spread assumed 0.6).
    "alpaca": LengthDistribution(
        "lognormal", 19.31, 58.45, 0.6, 0.6, (2, 512), (2, 1024),
        source="PagedAttention paper (SOSP 2023) Fig. 11, Alpaca",
    ),
    # Azure LLM inference trace 2023, code service (Patel et al., "Splitwise", ISCA 2024; CC-BY):
    # log-mean and log-sd of ContextTokens (7.00, 1.36) and GeneratedTokens (2.79, 0.85) over
    # its 8,819 requests, clipped to the trace's observed ranges.
    "azure-code": LengthDistribution(
        "lognormal", math.exp(7.00 + 1.36**2 / 2), math.exp(2.79 + 0.85**2 / 2), 1.36, 0.85, (3, 7437), (6, 1899),
        source="Azure LLM inference trace 2023, code (Splitwise, ISCA 2024)",
    ),
    # Same trace, conversation service: Splitwise reports median prompt 1020 and median output
    # 129 tokens; spreads (1.0, 0.9) are our assumption.
    "azure-conversation": LengthDistribution(
        "lognormal", math.exp(math.log(1020) + 0.5), math.exp(math.log(129) + 0.405), 1.0, 0.9, (2, 8192), (2, 2048),
        source="Azure LLM inference trace 2023, conversation (Splitwise, ISCA 2024)",
    ),
}


@dataclass(frozen=True)
class WorkloadConfig:
    """A synthetic workload. `arrival_rate` is requests/s (inf: all at once); with
    `concurrency`, arrivals are closed-loop instead: N clients, each sending its next request
    when its previous one finishes (how "128 concurrent users" is benchmarked)."""

    # Each setting is declared here once: the web schema, the command line's flags and the bounds
    # are made from these declarations (`bounds.setting`); the flags are servescope's own.
    num_requests: int = setting(200, "requests in the run", bound=Bound(1, MAX_REQUESTS), flag="--num-requests",
                                vllm_flag=False)
    arrival: str = setting("poisson", "arrival process", choices=ARRIVALS)
    arrival_rate: float = setting(10.0, "requests per second (inf: all at once)", flag="--arrival-rate", vllm_flag=False,
                                  bound=Bound(0, 1e6, integer=False, low_open=True, infinite_ok=True))
    # Gamma gaps have shape 1/cv^2: beyond these the draws underflow to 0 or overflow.
    arrival_cv: float = setting(1.0, "gamma arrivals: burstiness (CV of gaps)", bound=Bound(0.01, 100, integer=False))
    concurrency: int = setting(0, "closed loop: N clients, each sends its next request when its last finishes "
                                  "(0: open loop)", bound=Bound(0, 100_000), flag="--concurrency", vllm_flag=False)
    # A server that starts with a queue in front of it (a restart, a launch): these requests are all
    # there at t = 0 and the arrival process carries on behind them, so a run opens under load.
    initial_burst: int = setting(0, "open loop: requests already waiting at the start, all arriving at t = 0 before "
                                    "the arrival process takes over (at most num_requests)", bound=Bound(0, MAX_REQUESTS),
                                 flag="--initial-burst", vllm_flag=False)
    lengths: str = setting("sharegpt", "length distribution: a named one, fixed, uniform or lognormal", max_chars=100)
    prompt_len: float = setting(512, "prompt length: fixed, uniform's low end, or lognormal's mean",
                                bound=Bound(1, MAX_TOKENS_PER_CONTEXT, integer=False))
    prompt_len_high: int = setting(0, "uniform's highest prompt length", bound=Bound(0, MAX_TOKENS_PER_CONTEXT))
    output_len: float = setting(128, "output length: fixed, uniform's low end, or lognormal's mean",
                                bound=Bound(1, MAX_TOKENS_PER_CONTEXT, integer=False))
    output_len_high: int = setting(0, "uniform's highest output length", bound=Bound(0, MAX_TOKENS_PER_CONTEXT))
    sigma: float = setting(0.6, "lognormal lengths: sigma of the log", bound=Bound(0, 4, integer=False))
    shared_prefix_len: int = setting(0, "tokens of shared system prompt", bound=Bound(0, MAX_TOKENS_PER_CONTEXT))
    num_shared_prefixes: int = setting(1, "distinct shared system prompts", bound=Bound(1, 10_000))
    # Fraction of requests sent at high priority (priority 0; the rest are 1).
    high_priority_fraction: float = setting(0.0, "share of requests sent at high priority",
                                            bound=Bound(0, 1, integer=False))
    seed: int = setting(0, "workload seed: same seed, same run", bound=Bound(0, 2**63 - 1), flag="--seed", vllm_flag=False)

    def __post_init__(self) -> None:
        for name in ("arrival", "lengths"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(name, f"must be a name, got {getattr(self, name)!r}")
        if self.arrival not in ARRIVALS:
            raise ConfigError("arrival", f"unknown arrival process {self.arrival!r}; expected one of {list(ARRIVALS)}")
        if self.lengths not in NAMED_LENGTHS and self.lengths not in ("fixed", "uniform", "lognormal"):
            raise ConfigError("lengths", f"unknown length distribution {self.lengths!r}; "
                                         f"expected fixed, uniform, lognormal or one of {sorted(NAMED_LENGTHS)}")
        check_all(WORKLOAD_BOUNDS, self)
        if self.lengths == "uniform":
            for name, low in (("prompt_len_high", self.prompt_len), ("output_len_high", self.output_len)):
                if getattr(self, name) < low:
                    raise ConfigError(name, f"must be >= the low end ({low}) for uniform lengths")
        if self.num_shared_prefixes > self.num_requests:
            # More prefixes than requests could never all be used, and each costs its tokens.
            raise ConfigError("num_shared_prefixes",
                              f"must be from 1 to num_requests ({self.num_requests}), got {self.num_shared_prefixes!r}")
        shared_tokens = self.shared_prefix_len * self.num_shared_prefixes
        if shared_tokens > MAX_SHARED_PREFIX_TOKENS:
            raise ConfigError("shared_prefix_len", f"shared_prefix_len x num_shared_prefixes must be at most "
                                                   f"{MAX_SHARED_PREFIX_TOKENS} tokens, got {shared_tokens}")

    @classmethod
    def from_dict(cls, data: dict) -> "WorkloadConfig":
        if not isinstance(data, dict):
            raise ConfigError("workload", f"must be a table of workload settings, got {data!r}")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(f"workload.{key}", "unknown workload setting")
        data = dict(data)
        if data.get("arrival_rate") in ("inf", "Infinity"):
            data["arrival_rate"] = math.inf
        return cls(**data)

    def length_distribution(self) -> LengthDistribution:
        if self.lengths in NAMED_LENGTHS:
            return NAMED_LENGTHS[self.lengths]
        if self.lengths == "uniform":
            return LengthDistribution("uniform", self.prompt_len, self.output_len,
                                      prompt_range=(int(self.prompt_len), self.prompt_len_high),
                                      output_range=(int(self.output_len), self.output_len_high))
        return LengthDistribution(self.lengths, self.prompt_len, self.output_len, self.sigma, self.sigma)


WORKLOAD_SETTINGS = settings_of(WorkloadConfig)
WORKLOAD_BOUNDS = bounds_of(WorkloadConfig)


@dataclass
class Workload:
    """Requests in arrival order; with `concurrency` > 0 the simulation releases them closed-loop.
    With `arrivals_by_step`, each request's `arrival_time` is the engine step it arrives at (how
    the recorded vLLM traces give arrivals)."""

    requests: Sequence[RequestSpec]
    concurrency: int = 0
    description: str = ""
    source: str = field(default="")
    arrivals_by_step: bool = False


def unique_prompt(index: int, length: int) -> range:
    """A prompt that shares no block with any other `unique_prompt`, at no memory cost.

    Its token ids run from a per-request offset past the vocabulary, so no two requests (and no
    shared prefix drawn from the vocabulary) can produce the same block hash.
    """
    start = VOCAB_SIZE + index * 1_000_003
    return range(start, start + length)


def lognormal_length(rng: random.Random, mean: float, sigma: float, low: int, high: int) -> int:
    """A lognormal draw with the given arithmetic mean, clipped to [low, high]."""
    mu = math.log(mean) - sigma * sigma / 2
    return max(low, min(high, int(round(rng.lognormvariate(mu, sigma)))))


def draw_length(rng: random.Random, kind: str, mean: float, sigma: float, bounds: tuple[int, int]) -> int:
    if kind == "fixed":
        return int(mean)
    if kind == "uniform":
        return rng.randint(bounds[0], bounds[1])
    return lognormal_length(rng, mean, sigma, bounds[0], bounds[1])


def arrival_times(rng: random.Random, config: WorkloadConfig) -> list[float]:
    n, rate = config.num_requests, config.arrival_rate
    if rate == math.inf or config.concurrency:
        return [0.0] * n
    if config.arrival == "fixed":
        times = [i / rate for i in range(n)]
    else:
        clock, times = 0.0, []
        for _ in range(n):
            if config.arrival == "poisson":
                clock += rng.expovariate(rate)
            else:
                # Gamma gaps with mean 1/rate and the requested CV: shape 1/cv^2 (cv > 1 is bursty).
                shape = 1.0 / config.arrival_cv**2
                clock += rng.gammavariate(shape, 1.0 / (rate * shape))
            times.append(clock)
    # The burst waits at t = 0; the others take the process's first arrivals, from t = 0 as without
    # it. Every gap is drawn either way, so the lengths drawn after them are the same requests'.
    burst = min(config.initial_burst, n)
    return [0.0] * burst + times[:n - burst]


def build_workload(config: WorkloadConfig, max_model_len: int = 1 << 30) -> Workload:
    """The requests of a synthetic workload; prompts are clipped so prompt + 1 fits max_model_len."""
    rng = random.Random(config.seed)
    dist = config.length_distribution()
    prefix_len = config.shared_prefix_len
    prompt_high = min(dist.prompt_range[1], max_model_len - 1 - prefix_len)
    if prompt_high < 1:  # checked before any prefix token is drawn: a huge value costs nothing
        raise ConfigError("shared_prefix_len", f"leaves no room for a prompt under max_model_len={max_model_len}")
    prefixes = [array("i", (rng.randrange(VOCAB_SIZE) for _ in range(prefix_len))) for _ in range(config.num_shared_prefixes)]
    requests = RequestTable(prefixes if prefix_len else [])
    for arrival in arrival_times(rng, config):
        prompt_len = max(1, min(prompt_high, draw_length(rng, dist.kind, dist.prompt_mean, dist.prompt_sigma, dist.prompt_range)))
        output_len = max(1, draw_length(rng, dist.kind, dist.output_mean, dist.output_sigma, dist.output_range))
        prefix_index = rng.randrange(config.num_shared_prefixes) if prefix_len else 0
        priority = 0
        if config.high_priority_fraction:
            priority = 0 if rng.random() < config.high_priority_fraction else 1
        requests.append(arrival, prefix_len + prompt_len, output_len, prefix_index, priority)
    return Workload(requests, config.concurrency, source=dist.source)


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
    """Poisson arrivals with lognormal prompt and output lengths (a shorthand for `build_workload`)."""
    config = WorkloadConfig(
        num_requests=num_requests, arrival_rate=arrival_rate, lengths="lognormal", prompt_len=prompt_mean,
        output_len=output_mean, sigma=sigma, shared_prefix_len=shared_prefix_len,
        num_shared_prefixes=num_shared_prefixes, seed=seed,
    )
    workload = build_workload(config, max_model_len=max_prompt_len + 1)
    return [
        RequestSpec(r.request_id, r.arrival_time, r.prompt_token_ids, min(r.max_tokens, max_output_len), r.priority)
        for r in workload.requests
    ]
