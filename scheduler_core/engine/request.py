"""A request as vLLM's V1 scheduler sees it: token counters, status and the timestamps of its life."""

from __future__ import annotations

import enum
from array import array
from collections.abc import Sequence

from ..errors import ConfigError

# Every simulated decode samples this token id (the recorded vLLM runs do the same); only its
# effect on the hashes of output blocks matters to the simulation.
SAMPLED_TOKEN_ID = 1


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"
    # Preempted by swapping: its KV sits in CPU swap space, so it resumes without recomputing.
    SWAPPED = "swapped"
    FINISHED_STOPPED = "finished_stopped"
    FINISHED_LENGTH_CAPPED = "finished_length_capped"
    FINISHED_ABORTED = "finished_aborted"

    @property
    def is_finished(self) -> bool:
        return self.name.startswith("FINISHED")


class Request:
    """One generation request.

    The scheduler's whole job is to make `num_computed_tokens` catch up with `num_tokens`
    (prompt + output so far). There is no separate prefill phase: a request with many
    uncomputed tokens is prefilling, one with a single uncomputed token is decoding.
    """

    __slots__ = (
        "request_id",
        "prompt_token_ids",
        "num_prompt_tokens",
        "max_tokens",
        "arrival_time",
        "priority",
        "arrival_index",
        "status",
        "num_computed_tokens",
        "num_output_tokens",
        "num_preemptions",
        "block_hashes",
        "first_scheduled_time",
        "token_times",
        "finish_time",
        "num_cached_tokens",
        "num_output_placeholders",
        "num_in_flight_tokens",
        "num_stale_output_tokens",
        "num_spec_tokens",
    )

    def __init__(
        self,
        request_id: str,
        prompt_token_ids: Sequence[int],
        max_tokens: int,
        arrival_time: float = 0.0,
        priority: int = 0,
        arrival_index: int = 0,
    ):
        if len(prompt_token_ids) == 0:
            raise ConfigError(f"requests[{request_id}].prompt_token_ids", "a prompt needs at least one token")
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"requests[{request_id}].max_tokens", f"must be a positive integer, got {max_tokens!r}")
        if arrival_time < 0:
            raise ConfigError(f"requests[{request_id}].arrival_time", f"must be >= 0, got {arrival_time!r}")
        self.request_id = request_id
        # Any sequence: synthetic workloads pass `range` objects so a long unique prompt costs no memory.
        self.prompt_token_ids = prompt_token_ids
        self.num_prompt_tokens = len(prompt_token_ids)
        self.max_tokens = max_tokens
        self.arrival_time = arrival_time
        self.priority = priority
        # Order of arrival at the engine; breaks ties the way vLLM's arrival timestamps do.
        self.arrival_index = arrival_index
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.num_output_tokens = 0
        self.num_preemptions = 0
        # Chained hashes of the full blocks of prompt + output, filled lazily (prefix caching only).
        self.block_hashes: list[int] = []
        self.first_scheduled_time: float | None = None
        # Simulated time at which each output token was produced (for TTFT and inter-token
        # latency); an array of doubles, 8 bytes a token, as a kept request holds it for good.
        self.token_times = array("d")
        self.finish_time: float | None = None
        # Prefix-cache hit at first admission, as vLLM reports it (-1 until admitted).
        self.num_cached_tokens = -1
        # Async scheduling: output tokens scheduled (counted in num_computed_tokens) whose values
        # are still in flight; tokens of batches not yet completed; and, after a preemption, how
        # many of those belong to the discarded past (their output still arrives, but must not
        # touch the reset counters).
        self.num_output_placeholders = 0
        self.num_in_flight_tokens = 0
        self.num_stale_output_tokens = 0
        # Speculative decoding: draft tokens proposed after its last step, verified by its next.
        self.num_spec_tokens = 0

    @property
    def num_tokens(self) -> int:
        return self.num_prompt_tokens + self.num_output_tokens

    def token_id(self, position: int) -> int:
        if position < self.num_prompt_tokens:
            return self.prompt_token_ids[position]
        return SAMPLED_TOKEN_ID

    def update_block_hashes(self, block_size: int, num_tokens: int, num_lookahead_tokens: int = 0) -> list[int]:
        """Extend the chained block hashes to cover the full blocks among the first `num_tokens`.

        A block's hash is hash(parent hash, its token ids): equal hashes mean an equal prefix,
        which is what lets a new request reuse another's KV blocks. With `num_lookahead_tokens`
        (vLLM 0.33's lookahead hashes for EAGLE) it also covers that many known tokens after the
        block, so a block is hashed only once they exist.
        """
        if num_lookahead_tokens:
            return self._update_lookahead_block_hashes(block_size, min(num_tokens, self.num_tokens - num_lookahead_tokens),
                                                       num_lookahead_tokens)
        hashes, prompt, num_prompt_tokens = self.block_hashes, self.prompt_token_ids, self.num_prompt_tokens
        num_full_blocks = num_tokens // block_size
        # 0, not None, for the first block: hash(None) differs between processes before Python 3.12.
        parent = hashes[-1] if hashes else 0
        for start in range(len(hashes) * block_size, num_full_blocks * block_size, block_size):
            end = start + block_size
            tokens = tuple(prompt[start:end])
            if end > num_prompt_tokens:
                # Past the prompt every token is the sampled one (see `token_id`).
                tokens += (SAMPLED_TOKEN_ID,) * (end - start - len(tokens))
            parent = hash((parent, tokens))
            hashes.append(parent)
        return hashes

    def _update_lookahead_block_hashes(self, block_size: int, num_tokens: int, num_lookahead_tokens: int) -> list[int]:
        hashes, token_id = self.block_hashes, self.token_id
        parent = hashes[-1] if hashes else 0
        for start in range(len(hashes) * block_size, num_tokens // block_size * block_size, block_size):
            end = start + block_size
            tokens = tuple(token_id(position) for position in range(start, end + num_lookahead_tokens))
            parent = hash((parent, tokens, num_lookahead_tokens))
            hashes.append(parent)
        return hashes

    def sort_key(self) -> tuple:
        """Priority order: lower value first, then earlier arrival (vLLM's `Request.__lt__`)."""
        return (self.priority, self.arrival_time, self.arrival_index)

    def __deepcopy__(self, memo: dict) -> "Request":
        # Prompts are never mutated, so snapshots share them; only the growing lists are copied.
        clone = Request.__new__(Request)
        for name in Request.__slots__:
            setattr(clone, name, getattr(self, name))
        clone.block_hashes = list(self.block_hashes)
        clone.token_times = self.token_times[:]
        memo[id(self)] = clone
        return clone

    def __repr__(self) -> str:
        return (
            f"Request({self.request_id!r}, {self.status.value}, "
            f"computed={self.num_computed_tokens}/{self.num_tokens}, out={self.num_output_tokens}/{self.max_tokens})"
        )
