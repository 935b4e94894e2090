"""`serve --kv-events-config '{json}'` (or the flag in a `--vllm` line): the publisher, opened
before the server starts, so a bad endpoint or a port in use is one line on the command line."""

from __future__ import annotations

import argparse

from .kv_events_config import FLAG, check_exposure, kv_events_config_of
from .kv_events_publisher import ZmqEventPublisher


def add_kv_events_flag(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(FLAG, metavar="JSON", default=None,
                       help="publish the KV cache's events as vLLM does, for KV-aware routers: vLLM's KVEventsConfig, "
                            "e.g. '{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\", "
                            "\"replay_endpoint\": \"tcp://*:5558\"}' (also read from a --vllm line)")


def open_kv_event_publisher(args: argparse.Namespace) -> ZmqEventPublisher | None:
    config = kv_events_config_of(args.kv_events_config, getattr(args, "vllm", None))
    if config is None or not config.publishes:
        return None
    check_exposure(config, args.public)
    publisher = ZmqEventPublisher(config)
    replay = f", replay requests on {publisher.replay_endpoint}" if publisher.replay_endpoint else ""
    print(f"servescope: KV cache events (vLLM's ZeroMQ publisher) on {publisher.endpoint}, topic {config.topic!r}{replay}; "
          "they follow the newest session", flush=True)
    return publisher
