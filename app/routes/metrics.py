"""/metrics in Prometheus text format, with vLLM's metric names, for one session.

So an existing vLLM Grafana dashboard can watch a simulated engine: `?session=ID` picks the
session (default: the most recently active one; on a `--public` server, of the caller's own).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from scheduler_core.sim.metrics import StreamingHistogram

from .api import client_of

router = APIRouter()

# vLLM's own bucket boundaries (seconds) for its latency histograms.
LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                   20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0]


def cumulative(histogram: StreamingHistogram, bounds: list[float]) -> list[tuple[str, float]]:
    """Fine log buckets regrouped under Prometheus `le` bounds (each fine bucket by its middle)."""
    counts = [0] * len(bounds)
    for lower, count in histogram.bins(max_bins=10_000):
        for i, bound in enumerate(bounds):
            if lower <= bound:
                counts[i] += count
                break
    out, running = [], 0
    for bound, count in zip(bounds, counts):
        running += count
        out.append((repr(bound), running))
    out.append(("+Inf", histogram.count))
    return out


class SessionCollector:
    def __init__(self, live):
        self.live = live

    def collect(self):
        session = self.live.session
        sim, labels = session.sim, {"model_name": session.scenario.model, "engine": "0"}
        names, values = list(labels), list(labels.values())
        scheduler, metrics = sim.scheduler, sim.metrics

        def gauge(name, doc, value):
            family = GaugeMetricFamily(name, doc, labels=names)
            family.add_metric(values, value)
            return family

        def counter(name, doc, value):
            family = CounterMetricFamily(name, doc, labels=names)
            family.add_metric(values, value)
            return family

        def histogram(name, doc, h, bounds):
            family = HistogramMetricFamily(name, doc, labels=names)
            family.add_metric(values, cumulative(h, bounds), sum_value=h.total)
            return family

        yield gauge("vllm:num_requests_running", "Requests in the running batch.", len(scheduler.running))
        yield gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", len(scheduler.waiting))
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage (1 = full).", sim.kv_view().usage)
        yield counter("vllm:num_preemptions", "Preemptions.", metrics.num_preemptions)
        yield counter("vllm:prompt_tokens", "Prefill tokens of finished requests.", metrics.input_tokens)
        yield counter("vllm:generation_tokens", "Generated tokens of finished requests.", metrics.output_tokens)
        yield counter("vllm:prefix_cache_queries", "Tokens looked up in the prefix cache.", metrics.prefix_queries)
        yield counter("vllm:prefix_cache_hits", "Tokens found in the prefix cache.", metrics.prefix_hits)
        yield counter("vllm:request_success", "Finished requests.", metrics.num_finished)
        yield histogram("vllm:time_to_first_token_seconds", "Time to first token.", metrics.ttft, LATENCY_BUCKETS)
        yield histogram("vllm:inter_token_latency_seconds", "Inter-token latency.", metrics.itl, ITL_BUCKETS)
        yield histogram("vllm:e2e_request_latency_seconds", "End-to-end latency.", metrics.e2e, LATENCY_BUCKETS)
        yield histogram("vllm:request_queue_time_seconds", "Time waiting before first scheduled.", metrics.queue, LATENCY_BUCKETS)
        yield gauge("servescope:simulated_clock_seconds", "Simulated time of the session.", sim.clock_s)
        yield gauge("servescope:step", "Engine iterations simulated.", session.step)


@router.get("/metrics")
def prometheus_metrics(request: Request, session: str = "") -> Response:
    manager = request.app.state.manager
    if session:
        live = manager.get(session)
        if live is None:
            raise HTTPException(404, f"no session {session!r}")
    else:  # on a public server, only among the caller's own sessions
        public, caller = request.app.state.settings.public, client_of(request)
        own = [candidate for candidate in manager.sessions.values() if not public or candidate.owner == caller]
        live = max(own, key=lambda candidate: candidate.session.last_activity, default=None)
    registry = CollectorRegistry()
    if live is not None:
        registry.register(SessionCollector(live))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz")
def healthz(request: Request) -> dict:
    manager = request.app.state.manager
    return {"status": "ok", "sessions": len(manager.sessions)}
