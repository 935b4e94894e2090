"""What the lessons' arms are made of: Llama-3.1-8B on an H200 unless an arm says otherwise, a
recorded vLLM trace under one vLLM profile, and the latency columns most comparison tables end with."""

from __future__ import annotations

from dataclasses import asdict
from importlib import resources

from ..engine.config import VllmCompat
from ..sim.replay import load_trace

LLAMA_H200 = {"model": "llama-3.1-8b", "gpu": "h200"}


def arm(engine: dict, workload: dict, **top) -> dict:
    return {**LLAMA_H200, **top, "engine": engine, "workload": workload}


def recorded_arm(trace_name: str, vllm_version: str, **switches: bool) -> dict:
    """A recorded vLLM trace (shipped in scheduler_core/data) under one vLLM profile."""
    path = str(resources.files("scheduler_core").joinpath(f"data/{trace_name}"))
    config = dict(load_trace(path)["config"])
    config["scheduling_order"] = config.pop("policy", "fcfs")
    compat = {**asdict(VllmCompat.for_version(vllm_version)), **switches}
    return {**LLAMA_H200, "trace": path, "engine": {**config, "compat": compat}}


TABLE_LATENCY = [
    ("throughput (output tok/s)", "report.output_tokens_per_s", ",.0f"),
    ("TTFT p50 (s)", "report.ttft_s.p50", ".3f"),
    ("TTFT p99 (s)", "report.ttft_s.p99", ".3f"),
    ("ITL p99 (s)", "report.itl_s.p99", ".4f"),
    ("preemptions", "preemptions", ",d"),
]
