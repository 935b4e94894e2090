"""`serve --kv-events-config '{json}'` (or the flag in a `--vllm` line): the publisher, opened
before the server starts, so a bad endpoint or a port in use is one line on the command line."""

from __future__ import annotations

import argparse

from scheduler_core.errors import ConfigError

from .kv_events_config import FLAG, check_exposure, kv_events_config_of
from .kv_events_publisher import ZmqEventPublisher


def add_kv_events_flag(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(FLAG, metavar="JSON", default=None,
                       help="publish the KV cache's events as vLLM does, for KV-aware routers: vLLM's KVEventsConfig, "
                            "e.g. '{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\", "
                            "\"replay_endpoint\": \"tcp://*:5558\"}' (also read from a --vllm line)")


def open_kv_event_publishers(args: argparse.Namespace, num_ranks: int = 1) -> list[ZmqEventPublisher]:
    """One publisher per served engine (`--replicas`), as one per vLLM data-parallel rank: rank i's
    endpoints offset by i; none when events are off."""
    config = kv_events_config_of(args.kv_events_config, getattr(args, "vllm", None))
    if config is None or not config.publishes:
        return []
    check_exposure(config, args.public)
    publishers: list[ZmqEventPublisher] = []
    try:
        for rank in range(num_ranks):
            publishers.append(ZmqEventPublisher(config.for_rank(rank)))
    except (OSError, ConfigError):
        for publisher in publishers:
            publisher.close()
        raise
    for rank, publisher in enumerate(publishers):
        replay = f", replay requests on {publisher.replay_endpoint}" if publisher.replay_endpoint else ""
        where = f"on {publisher.endpoint}, topic {config.topic!r}{replay}"
        if num_ranks > 1:
            print(f"servescope: replica {rank}'s KV cache events (vLLM's ZeroMQ publisher, data_parallel_rank {rank}) "
                  f"{where}", flush=True)
        else:
            print(f"servescope: KV cache events (vLLM's ZeroMQ publisher) {where}; they follow the newest session", flush=True)
    return publishers
