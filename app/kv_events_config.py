"""`--kv-events-config`: vLLM's `KVEventsConfig`, read from the operator's command line only.

The fields, their defaults and the publisher rule are vLLM 0.33.0's (`vllm/config/kv_events.py`):
`publisher` is "zmq" when events are enabled and none is named, "null" otherwise. The JSON comes
from `servescope serve --kv-events-config '{...}'` or from the `--kv-events-config` of a
`--vllm "vllm serve ..."` line; no web request can name an endpoint, so nothing a browser sends
opens or moves a socket.

Bounds vLLM does not have: the replay buffer and the send queue are capped in bytes as well as in
batches (a slow subscriber cannot grow memory), and a `--public` server refuses to listen on
every interface (see `check_exposure`).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, fields

from scheduler_core.errors import ConfigError

FLAG = "--kv-events-config"
PUBLISHERS = ("null", "zmq")
ENDPOINT_SCHEMES = ("tcp://", "ipc://", "inproc://")
MAX_TEXT_CHARS = 256
# How many batches each buffer may be asked to hold (vLLM's defaults are 10,000 and 100,000).
MAX_BUFFER_STEPS = 100_000
MAX_QUEUE_SIZE = 100_000
MAX_HWM = 1_000_000
# ... and the bytes each may hold whatever the counts: past them, the oldest replay batches go,
# and a send queue that fills is emptied for one resync batch (kv_event_feed.py).
MAX_REPLAY_BYTES = 64 * 2**20
MAX_QUEUED_BYTES = 32 * 2**20


@dataclass(frozen=True)
class KVEventsConfig:
    enable_kv_cache_events: bool = False
    publisher: str | None = None
    endpoint: str = "tcp://*:5557"
    replay_endpoint: str | None = None
    buffer_steps: int = 10_000
    hwm: int = 100_000
    max_queue_size: int = 100_000
    topic: str = ""

    def __post_init__(self) -> None:
        if self.publisher is None:
            object.__setattr__(self, "publisher", "zmq" if self.enable_kv_cache_events else "null")
        if type(self.enable_kv_cache_events) is not bool:
            raise _error("enable_kv_cache_events", "must be true or false")
        if self.publisher not in PUBLISHERS:
            raise _error("publisher", f"unknown publisher {self.publisher!r}; expected one of {list(PUBLISHERS)}")
        for name in ("endpoint", "replay_endpoint"):
            value = getattr(self, name)
            if value is None and name == "replay_endpoint":
                continue
            if not isinstance(value, str) or not value.startswith(ENDPOINT_SCHEMES) or len(value) > MAX_TEXT_CHARS:
                raise _error(name, f"a ZeroMQ endpoint starting with {', '.join(ENDPOINT_SCHEMES)}, "
                                   f"at most {MAX_TEXT_CHARS} characters")
        if not isinstance(self.topic, str) or len(self.topic) > MAX_TEXT_CHARS:
            raise _error("topic", f"a string of at most {MAX_TEXT_CHARS} characters")
        for name, high in (("buffer_steps", MAX_BUFFER_STEPS), ("hwm", MAX_HWM), ("max_queue_size", MAX_QUEUE_SIZE)):
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= high:
                raise _error(name, f"a whole number from 1 to {high:,}")

    @property
    def publishes(self) -> bool:
        return self.enable_kv_cache_events and self.publisher == "zmq"

    def for_rank(self, data_parallel_rank: int) -> "KVEventsConfig":
        """The config of data-parallel rank `data_parallel_rank`'s publisher (`serve --openai --replicas`):
        its endpoints offset as vLLM offsets them (see `offset_endpoint`)."""
        return dataclasses.replace(self, endpoint=offset_endpoint(self.endpoint, data_parallel_rank),
                                   replay_endpoint=offset_endpoint(self.replay_endpoint, data_parallel_rank))

    @classmethod
    def from_json(cls, text: str) -> "KVEventsConfig":
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(FLAG, f"not JSON: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(FLAG, "a JSON object of KVEventsConfig fields")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise _error(key, f"unknown field; expected one of {sorted(known)}")
        return cls(**data)


def _error(name: str, reason: str) -> ConfigError:
    return ConfigError(f"{FLAG}.{name}", reason)


def binds(endpoint: str) -> bool:
    """vLLM's rule (`ZmqEventPublisher._is_bind_endpoint`): a wildcard address, ipc:// or inproc://
    is bound; any other address is a subscriber's (a router's) to connect to."""
    return "*" in endpoint or "::" in endpoint or endpoint.startswith(("ipc://", "inproc://"))


def offset_endpoint(endpoint: str | None, data_parallel_rank: int) -> str | None:
    """Rank `data_parallel_rank`'s endpoint, by vLLM's rule (`ZmqEventPublisher.offset_endpoint_port`):
    rank 0 keeps it; a tcp:// port goes up by the rank (port 0, the system's choice, stays), an
    inproc:// name gets `_dp` and the rank. vLLM refuses ipc:// for ranks past 0; here an ipc://
    path gets the same suffix as an inproc:// name, so a --public fleet can publish on ipc:// too."""
    if endpoint is None or data_parallel_rank == 0:
        return endpoint
    if endpoint.startswith("tcp://"):
        address, _, port = endpoint.rpartition(":")
        if not port.isdigit():
            raise _error("endpoint", f"{endpoint} has no port to offset for data-parallel rank {data_parallel_rank}")
        if int(port) == 0:
            return endpoint
        if int(port) + data_parallel_rank > 65_535:
            raise _error("endpoint", f"{endpoint} offset by rank {data_parallel_rank} passes port 65535")
        return f"{address}:{int(port) + data_parallel_rank}"
    return f"{endpoint}_dp{data_parallel_rank}"


def listens_on_network(endpoint: str) -> bool:
    return endpoint.startswith("tcp://") and binds(endpoint)


def check_exposure(config: KVEventsConfig, public: bool) -> None:
    """A `--public` (classroom) server publishes no KV events on a socket anyone can reach: they
    carry every request's token ids, the students' prompts among them, and ZeroMQ asks no one who
    they are. Connecting out to the router the operator names (vLLM's connect mode, as llm-d sets
    it up) and ipc:// sockets stay open to it."""
    if not public or not config.publishes:
        return
    for name in ("endpoint", "replay_endpoint"):
        endpoint = getattr(config, name)
        # The replay socket is always bound, as in vLLM.
        if endpoint is not None and endpoint.startswith("tcp://") and (name == "replay_endpoint" or binds(endpoint)):
            raise _error(name, f"{endpoint} would listen on the network of a --public server, where every request's "
                               "token ids would be readable by anyone; use an ipc:// endpoint, or tcp://ROUTER:PORT "
                               "for the publisher to connect to a router")


def kv_events_json_of_vllm_command(text: str | None) -> str | None:
    """The `--kv-events-config` JSON of a `vllm serve ...` line (`--kv-events-config X` or `=X`), or None."""
    if not text:
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None  # the line's own reader names the fault
    for i, word in enumerate(words):
        if word == FLAG and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(FLAG + "="):
            return word[len(FLAG) + 1:]
    return None


def kv_events_config_of(flag_json: str | None, vllm_line: str | None) -> KVEventsConfig | None:
    """The config `serve` was given, on its own flag or in its `--vllm` line (not both), or None."""
    in_line = kv_events_json_of_vllm_command(vllm_line)
    if flag_json is not None and in_line is not None:
        raise ConfigError(FLAG, "given twice: on its own and in the --vllm line; keep one")
    text = flag_json if flag_json is not None else in_line
    return KVEventsConfig.from_json(text) if text is not None else None
