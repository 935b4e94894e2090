"""The moments a fleet lesson's story is told at, found in the fleet's own events.

`FleetMoments` watches a fleet's events in order (route, transfer, landed, step) and keeps, for each
kind of moment, when it happened and the facts a caption quotes: the first request routed, a
request sent to a replica that does not hold its system prompt while another does, the first
prefix-cache hit, the first eviction, the imbalance at its worst, the first KV transfer, the first
token, a decode step slowed by a prompt chunk, the slowest step with decodes in it. Most are first
occurrences; the worst imbalance and the slowest step are the first time the run reaches its
extreme. tests/lessons/test_fleet_beats.py finds every moment again in the fleet's events, number for number.
"""

from __future__ import annotations

from collections import Counter

from ..cluster.cluster import Cluster, ClusterEvent
from ..cluster.router import prompt_block_hashes
from ..utils import plural

# Kinds of moment a fleet beat can be bound to, besides "opening" and "end".
MOMENT_KINDS = ("first_route", "cold_follower", "first_hit", "all_prompts", "first_eviction", "worst_imbalance",
                "first_transfer", "first_token", "mixed_step", "slowest_decode_step")


# How captions name the links.
LINK_TITLES = {"nvlink": "NVLink", "infiniband": "InfiniBand", "ethernet": "Ethernet"}


def chunk_list(chunks: list[int]) -> str:
    """Prompt chunks as a caption says them: "2,048 + 952"."""
    return " + ".join(f"{n:,}" for n in chunks)


class FleetMoments:
    """First (or most extreme) occurrences of fleet moments; feed it every event of the run in order."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.found: dict[str, dict] = {}
        self.block_size = cluster.entry_pool[0].sim.config.block_size
        # A system prompt is a first block of tokens that several requests of the workload share;
        # they are numbered in the order they first arrive.
        first_blocks = Counter(self._first_block(spec) for spec in cluster.workload.requests)
        self.shared_prompts = {key for key, count in first_blocks.items() if count > 1}
        self._prompt_number: dict[tuple, int] = {}
        self._first_request: dict[tuple, str] = {}
        self._prompt_of: dict[str, tuple] = {}  # request -> its system prompt, if it has one
        self._prompts_on: dict[str, set] = {r.name: set() for r in cluster.entry_pool}
        self._computed_by: dict[tuple[str, tuple], str] = {}  # (replica, prompt) -> request that computed it there
        self._role = {r.name: r.role for r in cluster.replicas}
        self._arrival: dict[str, float] = {}
        self._prompt_len: dict[str, int] = {}
        self._reason: dict[str, str] = {}
        self._chunks: dict[str, list[int]] = {}  # request -> its prompt chunks on its entry replica
        self._transfer: dict[str, tuple[float, float]] = {}  # request -> its transfer's (start, seconds)
        self._landed: dict[str, float] = {}  # request -> when its KV landed, until its first token
        self._decode_only_s: dict[str, float] = {}  # replica -> its last step of decodes alone
        self._largest_decode_step_chunk = 0  # the largest prompt chunk in any step with decodes

    def _first_block(self, spec) -> tuple:
        return tuple(spec.prompt_token_ids[:self.block_size])

    def _record(self, kind: str, event: ClusterEvent, **facts) -> str:
        self.found[kind] = {"t": event.time_s, **facts}
        return kind

    def observe(self, event: ClusterEvent) -> list[str]:
        """The kinds of moment this event is (new, or a new extreme)."""
        if event.kind == "route":
            return self._route(event)
        if event.kind == "transfer":
            return self._transfer_started(event)
        if event.kind == "landed":
            self._landed[event.request_id] = event.time_s
            return []
        return self._step(event)

    def _route(self, event: ClusterEvent) -> list[str]:
        kinds = []
        rid, spec = event.request_id, event.spec
        self._arrival[rid] = spec.arrival_time
        self._prompt_len[rid] = len(spec.prompt_token_ids)
        self._reason[rid] = event.detail
        key = self._first_block(spec)
        number = 0
        if key in self.shared_prompts:
            self._prompt_of[rid] = key
            number = self._prompt_number.setdefault(key, len(self._prompt_number) + 1)
            self._first_request.setdefault(key, rid)
        if "first_route" not in self.found:
            kinds.append(self._record("first_route", event, request=rid, replica=event.replica, reason=event.detail,
                                      prompt=len(spec.prompt_token_ids), system_prompt=number))
        pool = self.cluster.entry_pool
        if number and "cold_follower" not in self.found:
            # Where the prompt's leading blocks are cached now, the chosen replica included.
            hashes = prompt_block_hashes(spec, self.block_size)
            cached = {r.name: r.num_cached_prefix_blocks(hashes) for r in pool}
            warm = max(cached, key=cached.get)
            if cached[event.replica] == 0 and cached[warm] > 0:
                kinds.append(self._record("cold_follower", event, request=rid, replica=event.replica, system_prompt=number,
                                          warm=warm, blocks=cached[warm], shared=cached[warm] * self.block_size,
                                          first=self._first_request[key]))
        if number:
            self._prompts_on[event.replica].add(key)
            if "all_prompts" not in self.found and len(self._prompt_number) == len(self.shared_prompts):
                per_replica = {name: len(keys) for name, keys in self._prompts_on.items()}
                kinds.append(self._record("all_prompts", event, request=rid, replica=event.replica,
                                          count=len(self.shared_prompts), placements=sum(per_replica.values()),
                                          per_replica=", ".join(f"{name} {n}" for name, n in per_replica.items())))
        # A route raises only the chosen replica's load: the spread grows when it becomes the busiest.
        outstanding = {r.name: r.num_outstanding for r in pool}
        idlest = min(outstanding, key=outstanding.get)
        spread = outstanding[event.replica] - outstanding[idlest]
        if len(pool) > 1 and spread > self.found.get("worst_imbalance", {}).get("spread", 0):
            kinds.append(self._record("worst_imbalance", event, request=rid, replica=event.replica, reason=event.detail,
                                      busiest_n=outstanding[event.replica], idlest=idlest, idlest_n=outstanding[idlest],
                                      spread=spread))
        return kinds

    def _transfer_started(self, event: ClusterEvent) -> list[str]:
        rid, cost = event.request_id, event.transfer
        self._transfer[rid] = (event.time_s, cost.seconds)
        chunks = self._chunks.pop(rid, [])
        if "first_transfer" in self.found:
            return []
        return [self._record("first_transfer", event, request=rid, decode=event.replica, blocks=cost.num_blocks,
                             mb=cost.num_bytes / 1e6, transfer_ms=cost.seconds * 1e3,
                             link_title=LINK_TITLES.get(self.cluster.link.name, self.cluster.link.name),
                             prefill_ms=(event.time_s - self._arrival[rid]) * 1e3, chunks=chunk_list(chunks),
                             num_chunks=len(chunks))]

    def _step(self, event: ClusterEvent) -> list[str]:
        kinds = []
        record, name = event.record, event.replica
        role = self._role[name]
        prefill = [c for c in record.scheduled if c.kind == "prefill"]
        decodes = sum(1 for c in record.scheduled if c.kind == "decode")
        if role != "decode":
            for chunk in prefill:
                self._chunks.setdefault(chunk.request_id, []).append(chunk.num_tokens)
            for rid in record.admitted:
                key = self._prompt_of.get(rid)
                hit = record.cached_tokens.get(rid, 0)
                if key is not None and not hit:
                    self._computed_by[(name, key)] = rid
                if hit and "first_hit" not in self.found:
                    prompt = self._prompt_len[rid]
                    kinds.append(self._record("first_hit", event, request=rid, replica=name, hit=hit, prompt=prompt,
                                              computed=prompt - hit, reason=self._reason[rid],
                                              by=self._computed_by.get((name, key), ""),
                                              system_prompt=self._prompt_number.get(key, 0)))
        if record.num_blocks_evicted and "first_eviction" not in self.found:  # KV usage % as the card shows it
            kinds.append(self._record("first_eviction", event, replica=name, blocks=record.num_blocks_evicted,
                                      kv=100 * round(record.kv_usage, 4), free_blocks=record.num_free_blocks))
        if role != "prefill":
            kinds += self._decoding_step(event, role, prefill, decodes)
        if role == "colocated":  # a prefilled request's chunks are quoted when its transfer starts
            for rid in record.finished:
                self._chunks.pop(rid, None)
        return kinds

    def _decoding_step(self, event: ClusterEvent, role: str, prefill: list, decodes: int) -> list[str]:
        """Moments of the replicas users get their tokens from: colocated, or the decode pool."""
        kinds = []
        record, name = event.record, event.replica
        step_ms = record.step_s * 1e3
        if record.sampled and "first_token" not in self.found:
            rid = record.sampled[0]
            facts = {"request": rid, "replica": name, "ttft_ms": (record.clock_s_after - self._arrival[rid]) * 1e3,
                     "decode_ms": step_ms}
            if role == "decode":
                start, seconds = self._transfer[rid]
                facts.update(prefill_ms=(start - self._arrival[rid]) * 1e3, transfer_ms=seconds * 1e3,
                             wait_ms=(event.time_s - self._landed.pop(rid)) * 1e3)
                waiting = f" + {facts['wait_ms']:.1f} ms waiting for the step" if facts["wait_ms"] >= 0.05 else ""
                facts["parts"] = (f"{facts['prefill_ms']:.1f} ms to prefill + {facts['transfer_ms']:.1f} ms transfer{waiting} + "
                                  f"{step_ms:.1f} ms first decode")
            else:
                facts["chunks"] = chunk_list(self._chunks.get(rid, []))
                facts["num_chunks"] = len(self._chunks.get(rid, []))
            kinds.append(self._record("first_token", event, **facts))
        if decodes:
            largest = max((c.num_tokens for c in prefill), default=0)
            self._largest_decode_step_chunk = max(self._largest_decode_step_chunk, largest)
            if largest > 1 and name in self._decode_only_s and "mixed_step" not in self.found:
                chunk = max(prefill, key=lambda c: c.num_tokens)
                kinds.append(self._record("mixed_step", event, replica=name, request=chunk.request_id, tokens=chunk.num_tokens,
                                          decodes=decodes, decode_words=plural(decodes, "decode"),
                                          step_ms=step_ms, decode_only_ms=self._decode_only_s[name] * 1e3))
            if not prefill:
                self._decode_only_s[name] = record.step_s
            if step_ms > self.found.get("slowest_decode_step", {}).get("step_ms", 0.0):
                kinds.append(self._record("slowest_decode_step", event, replica=name, step_ms=step_ms, decodes=decodes,
                                          prompt_tokens=sum(c.num_tokens for c in prefill), largest_chunk=largest))
        return kinds

    def finish(self) -> dict[str, dict]:
        """Every moment found; `end` is the fleet's last instant. The slowest step also says the
        largest prompt chunk any step with decodes carried over the whole run."""
        if "slowest_decode_step" in self.found:
            self.found["slowest_decode_step"]["largest_chunk_in_run"] = self._largest_decode_step_chunk
        self.found["end"] = {"t": self.cluster.clock_s}
        return self.found
