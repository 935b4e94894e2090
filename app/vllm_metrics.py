"""vLLM's Prometheus metric set, rendered from simulated engines (vLLM 0.33's `PrometheusStatLogger`).

Every metric vLLM registers by default, under its name, type, help text, labels and buckets, with the
values a simulation counted the way vLLM counts them (scheduler_core/sim/vllm_stats.py); the
spec-decoding counters when drafts are on. What the simulation has no counterpart for (multi-modal
caches, KV connectors, admission limits, sleep mode, MFU estimates, which vLLM too reports only when
enabled) is registered and stays at vLLM's idle value, so dashboards and alerts find every series.

A series is one engine's life: its `engine` label names the engine and how many times it was sent
back in time (step back, reset), so a Prometheus reading it never sees a counter go backwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from scheduler_core.sim.simulation import Simulation
from scheduler_core.sim.vllm_stats import FINISH_REASONS, VllmStats

# vLLM's `CacheConfig` as its `vllm:cache_config_info` shows it: every field (as str()), defaults of 0.33.
CACHE_CONFIG_DEFAULTS = {
    "_block_size_resolved": "True", "block_size": "16", "cache_dtype": "auto", "cache_hit_alignment_tokens": "None",
    "effective_attention_block_size": "None", "enable_mamba_shared_prefix_checkpoint": "False",
    "enable_prefix_caching": "True", "gpu_memory_utilization": "0.92", "hash_block_size": "None",
    "is_attention_free": "False", "kv_cache_dtype_skip_layers": "[]", "kv_cache_layout": "None",
    "kv_cache_max_concurrency": "None", "kv_cache_memory_bytes": "None", "kv_cache_size_tokens": "None",
    "kv_offloading_backend": "native", "kv_offloading_size": "None", "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None", "mamba_cache_dtype": "auto", "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None", "mamba_ssm_cache_dtype": "auto", "num_cpu_blocks": "None",
    "num_gpu_blocks": "None", "num_gpu_blocks_override": "None", "prefix_cache_retention_interval": "0",
    "prefix_caching_hash_algo": "sha256", "prefix_match_unit": "None", "replayssm_buffer_len": "16",
    "simple_cpu_offload_num_blocks": "None", "skip_page_size_padded": "None", "sliding_window": "None",
    "swa_bounded_replay": "True", "use_kda_recoverssm": "False", "use_replayssm": "False",
    "user_specified_block_size": "False",
}

HISTOGRAM_HELP = {
    "request_prompt_tokens": "Number of prefill tokens processed.",
    "request_generation_tokens": "Number of generation tokens processed.",
    "iteration_tokens_total": "Histogram of number of tokens per engine_step.",
    "request_max_num_generation_tokens": "Histogram of maximum number of requested generation tokens.",
    "request_params_n": "Histogram of the n request parameter.",
    "request_params_max_tokens": "Histogram of the max_tokens request parameter.",
    "time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "request_time_per_output_token_seconds": "Histogram of time_per_output_token_seconds per request.",
    "e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
    "request_queue_time_seconds": "Histogram of time spent in WAITING phase for request.",
    "request_inference_time_seconds": "Histogram of time spent in RUNNING phase for request.",
    "request_prefill_time_seconds": "Histogram of time spent in PREFILL phase for request.",
    "request_decode_time_seconds": "Histogram of time spent in DECODE phase for request.",
    "request_num_preemptions": "Histogram of the number of times a request was preempted.",
    "request_prefill_kv_computed_tokens": "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
}


def engine_label(name: str, sim: Simulation) -> str:
    """The `engine` label of `sim`'s current series: its name, then `.N` after its N-th restore."""
    return name if not sim.num_restores else f"{name}.{sim.num_restores}"


@dataclass(frozen=True)
class EngineSeries:
    """One engine to render: its simulation, vLLM's `model_name` (the served model name), the
    `engine` label (see `engine_label`) and what its `cache_config_info` says beyond the defaults."""

    sim: Simulation
    model_name: str
    engine: str
    cache_config: Mapping[str, str] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [self.model_name, self.engine]

    @property
    def stats(self) -> VllmStats:
        # An engine not counting (never asked to) shows vLLM's values before its first step.
        return self.sim.metrics.vllm or VllmStats(self.sim.config.max_model_len)


LABELS = ["model_name", "engine"]


def _gauge(name: str, doc: str, engines: Sequence[EngineSeries], value, extra: tuple[str, Sequence[str]] | None = None):
    return _family(GaugeMetricFamily, name, doc, engines, value, extra)


def _counter(name: str, doc: str, engines: Sequence[EngineSeries], value, extra: tuple[str, Sequence[str]] | None = None):
    return _family(CounterMetricFamily, name, doc, engines, value, extra)


def _family(kind, name, doc, engines, value, extra):
    """One family, a sample per engine (and per value of the `extra` label); `value(engine[, label])`."""
    if extra is None:
        family = kind(name, doc, labels=LABELS)
        for engine in engines:
            family.add_metric(engine.labels, value(engine))
        return family
    label, label_values = extra
    family = kind(name, doc, labels=[*LABELS, label])
    for engine in engines:
        for label_value in label_values:
            family.add_metric([*engine.labels, label_value], value(engine, label_value))
    return family


def _histogram(name: str, doc: str, engines: Sequence[EngineSeries]) -> Metric:
    family = HistogramMetricFamily(f"vllm:{name}", doc, labels=LABELS)
    for engine in engines:
        histogram = engine.stats.histograms[name]
        bounds = [*(repr(float(bound)) for bound in histogram.bounds), "+Inf"]
        family.add_metric(engine.labels, list(zip(bounds, histogram.cumulative())), sum_value=histogram.sum)
    return family


def vllm_families(engines: Sequence[EngineSeries]) -> Iterator[Metric]:
    """vLLM's metric families for these engines, in the order vLLM registers them."""
    def stats(name):
        return lambda engine: getattr(engine.stats, name)

    yield _gauge("vllm:num_requests_running", "Number of requests in model execution batches.", engines,
                 stats("num_requests_running"))
    yield _gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", engines,
                 stats("num_requests_waiting"))
    yield _gauge("vllm:num_requests_waiting_by_reason",
                 "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; "
                 "'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). "
                 "Sum of all reasons equals vllm:num_requests_waiting.", engines,
                 lambda engine, reason: engine.stats.num_requests_waiting if reason == "capacity" else 0,
                 ("reason", ("capacity", "deferred")))
    yield _gauge("vllm:engine_sleep_state",
                 "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
                 "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", engines,
                 lambda engine, state: int(state == "awake"), ("sleep_state", ("awake", "weights_offloaded", "discard_all")))
    yield _gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", engines,
                 stats("kv_cache_usage_perc"))
    yield _counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", engines,
                   lambda engine: engine.sim.metrics.prefix_queries)
    yield _counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", engines,
                   lambda engine: engine.sim.metrics.prefix_hits)
    for what, unit in (("queries", "queried"), ("hits", "cached")):
        yield _counter(f"vllm:external_prefix_cache_{what}",
                       f"External prefix cache {what} from KV connector cross-instance cache sharing, "
                       f"in terms of number of {unit} tokens.", engines, lambda engine: 0)
    for what, unit in (("queries", "queried"), ("hits", "cached")):
        yield _counter(f"vllm:mm_cache_{what}", f"Multi-modal cache {what}, in terms of number of {unit} items.",
                       engines, lambda engine: 0)
    yield _counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", engines,
                   stats("num_preemptions"))
    yield _counter("vllm:prompt_tokens", "Number of prefill tokens processed.", engines, stats("prompt_tokens"))
    by_source = {"local_compute": "prompt_tokens_computed", "local_cache_hit": "prompt_tokens_cached"}
    yield _counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", engines,
                   lambda engine, source: getattr(engine.stats, by_source[source]) if source in by_source else 0,
                   ("source", ("local_compute", "local_cache_hit", "external_kv_transfer")))
    yield _counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).", engines,
                   stats("prompt_tokens_cached"))
    yield _counter("vllm:prompt_tokens_cached_by_source",
                   "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host "
                   "(offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. "
                   "Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.", engines,
                   lambda engine, source: engine.sim.metrics.prefix_hits if source == "device" else 0,
                   ("source", ("device", "host", "p2p", "disk", "external_unspecified")))
    yield _counter("vllm:generation_tokens", "Number of generation tokens processed.", engines, stats("generation_tokens"))
    yield _counter("vllm:request_success", "Count of successfully processed requests.", engines,
                   lambda engine, reason: engine.stats.request_success[reason], ("finished_reason", FINISH_REASONS))
    rejections = CounterMetricFamily("vllm:admission_rejections",
                                     "Number of admission attempts rejected by a queue limit, by reason.",
                                     labels=["model_name", "reason"])
    for model_name in dict.fromkeys(engine.model_name for engine in engines):
        for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
            rejections.add_metric([model_name, reason], 0)
    yield rejections
    for name, doc in HISTOGRAM_HELP.items():
        yield _histogram(name, doc, engines)
    for name, what in (("flops", "floating point operations"), ("read_bytes", "bytes read from memory"),
                       ("write_bytes", "bytes written to memory")):
        # vLLM estimates these only under --enable-mfu-metrics; registered, they stay at zero.
        yield _counter(f"vllm:estimated_{name}_per_gpu_total",
                       f"Estimated number of {what} per GPU (for Model Flops Utilization calculations).", engines,
                       lambda engine: 0)
    yield _cache_config_info(engines)
    yield from _spec_decode_families([engine for engine in engines if engine.sim.config.speculative_config])


def _cache_config_info(engines: Sequence[EngineSeries]) -> Metric:
    names = [*CACHE_CONFIG_DEFAULTS, "engine"]
    family = GaugeMetricFamily("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", labels=names)
    for engine in engines:
        config = engine.sim.config
        info = {**CACHE_CONFIG_DEFAULTS, "block_size": str(config.block_size),
                "enable_prefix_caching": str(config.enable_prefix_caching), "num_gpu_blocks": str(config.num_gpu_blocks),
                **engine.cache_config, "engine": engine.engine}
        family.add_metric([info[name] for name in names], 1)
    return family


def _spec_decode_families(engines: Sequence[EngineSeries]) -> Iterator[Metric]:
    """vLLM's `SpecDecodingProm`: registered only when a speculative config is set."""
    if not engines:
        return
    for name, doc in (("num_drafts", "Number of spec decoding drafts."), ("num_draft_tokens", "Number of draft tokens."),
                      ("num_accepted_tokens", "Number of accepted tokens.")):
        yield _counter(f"vllm:spec_decode_{name}", doc, engines,
                       lambda engine, name=name: getattr(engine.sim.metrics.spec_decode, name))
    family = CounterMetricFamily("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                                 labels=[*LABELS, "position"])
    for engine in engines:
        per_pos = engine.sim.metrics.spec_decode.num_accepted_tokens_per_pos
        for position in range(engine.sim.config.speculative_config.num_speculative_tokens):
            family.add_metric([*engine.labels, str(position)], per_pos[position] if position < len(per_pos) else 0)
    yield family


def servescope_families(engines: Sequence[EngineSeries]) -> Iterator[Metric]:
    """The simulation's own figures, beside vLLM's."""
    yield _gauge("servescope:simulated_clock_seconds", "Simulated time of the engine.", engines,
                 lambda engine: engine.sim.clock_s)
    yield _gauge("servescope:step", "Engine iterations simulated.", engines, lambda engine: engine.sim.step_index)


class _Families:
    def __init__(self, engines: Sequence[EngineSeries]):
        self.engines = engines

    def collect(self) -> Iterator[Metric]:
        if self.engines:
            yield from vllm_families(self.engines)
            yield from servescope_families(self.engines)


def render_metrics(engines: Sequence[EngineSeries]) -> bytes:
    """The Prometheus text exposition of these engines (empty for none)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(engines))
    return generate_latest(registry)
