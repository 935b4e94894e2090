"""Drive vLLM's own V1 Scheduler (or AsyncScheduler) over a servescope trace with a fake model, on
CPU, and write the step log servescope's `replay` must reproduce byte for byte.

Run with a Python that has vLLM installed (see README.md), never the project's own venv:
    python tools/vllm_recorder/record.py TRACE.json.gz OUT.jsonl.gz [--async-scheduling]
        [--speculative-config JSON] [--acceptance-seed N]

vLLM is used as a library: its Scheduler, KV cache manager and request types are imported, not
copied. What this file adds is the fake model (every request whose scheduled chunk reaches the end
of its known tokens samples token id 1; drafts are accepted by a seeded per-position draw) and, for
async scheduling, the engine loop's order of schedule() and update_from_output() with a batch
queue of two, as in `EngineCore.step_with_batch_queue`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from collections import deque
from pathlib import Path

# Everything the recorder loads is a local file (the fake model's and the fake drafter's configs):
# offline, vLLM fails at once instead of hanging on the model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import vllm  # noqa: E402
from trace_files import write_gzip  # noqa: E402
from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash, resolve_kv_cache_block_sizes  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

# The acceptance draw is servescope's own (standard library only): the recorder and the simulator
# share one implementation, so their drafts can never be accepted differently.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from scheduler_core.engine.spec_decode import AcceptanceModel, SpeculativeConfig  # noqa: E402

SAMPLED_TOKEN_ID = 1
PREFIX_STATS = ("requests", "queries", "hits", "preempted_requests", "preempted_queries", "preempted_hits")
DRAFT_TOKEN_ID = 1

# A tiny model config: the scheduler needs a ModelConfig, never the weights.
FAKE_MODEL_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1,
    "num_hidden_layers": 1, "vocab_size": 1024, "max_position_embeddings": 1 << 20,
    "torch_dtype": "float16", "rms_norm_eps": 1e-6,
}
# An EAGLE drafter of one layer over the fake model: only its config is ever read (the scheduler
# needs the speculative config, never the draft weights), from a local file, so no hub access.
FAKE_EAGLE_ARCHITECTURE = "EagleLlamaForCausalLM"
# Drafters that need a draft model's config; n-gram needs none.
DRAFT_MODEL_METHODS = ("eagle",)


def load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def fake_model_dir(architecture: str = "LlamaForCausalLM") -> str:
    """A directory holding only a tiny config.json: all vLLM's config classes read of a model."""
    model_dir = tempfile.mkdtemp(prefix="fake-model-")
    Path(model_dir, "config.json").write_text(json.dumps({**FAKE_MODEL_CONFIG, "architectures": [architecture]}))
    return model_dir


def build_scheduler(config: dict, async_scheduling: bool, speculative_config: dict | None) -> Scheduler:
    model_dir = fake_model_dir()
    model_config = ModelConfig(model=model_dir, skip_tokenizer_init=True, max_model_len=config["max_model_len"],
                               dtype="float16", seed=0)
    scheduler_config = SchedulerConfig(
        max_num_seqs=config["max_num_seqs"],
        max_num_batched_tokens=config["max_num_batched_tokens"],
        max_model_len=config["max_model_len"],
        enable_chunked_prefill=config["enable_chunked_prefill"],
        long_prefill_token_threshold=config.get("long_prefill_token_threshold", 0),
        policy=config.get("policy", "fcfs"),
        async_scheduling=async_scheduling,
        is_encoder_decoder=False,
    )
    cache_config = CacheConfig(block_size=config["block_size"], enable_prefix_caching=config["enable_prefix_caching"])
    cache_config.num_gpu_blocks = config["num_gpu_blocks"]
    spec = None
    if speculative_config:
        from vllm.config import ParallelConfig, SpeculativeConfig

        speculative_config = dict(speculative_config)
        if speculative_config["method"] in DRAFT_MODEL_METHODS and "model" not in speculative_config:
            speculative_config["model"] = fake_model_dir(FAKE_EAGLE_ARCHITECTURE)
        spec = SpeculativeConfig(**speculative_config, target_model_config=model_config,
                                 target_parallel_config=ParallelConfig())
    # The scheduler never touches a device; naming one skips vLLM's platform detection.
    vllm_config = VllmConfig(model_config=model_config, cache_config=cache_config, device_config=DeviceConfig("cpu"),
                             scheduler_config=scheduler_config, speculative_config=spec)
    kv_cache_config = KVCacheConfig(
        num_blocks=config["num_gpu_blocks"],
        kv_cache_tensors=[],
        kv_cache_groups=kv_cache_groups(config),
    )
    if async_scheduling:
        from vllm.v1.core.sched.async_scheduler import AsyncScheduler as cls
    else:
        cls = Scheduler
    # As EngineCore does: with several groups the scheduler's block is the LCM of theirs (a Mamba
    # group's is max_model_len); one group keeps the cache's block size.
    scheduler_block_size, hash_block_size = resolve_kv_cache_block_sizes(kv_cache_config, vllm_config)
    return cls(vllm_config=vllm_config, kv_cache_config=kv_cache_config,
               structured_output_manager=StructuredOutputManager(vllm_config),
               block_size=scheduler_block_size, hash_block_size=hash_block_size, log_stats=True)


def kv_cache_groups(config: dict) -> list[KVCacheGroupSpec]:
    """One vLLM KV cache group per entry of the trace's `kv_cache_groups` (default: one full-attention
    group), one fake layer each, all sharing the pool of num_gpu_blocks, as vLLM's hybrid models do."""
    from vllm.v1.kv_cache_interface import ChunkedLocalAttentionSpec, MambaSpec, SlidingWindowSpec

    block_size = config["block_size"]
    attention = dict(block_size=block_size, num_kv_heads=1, head_size=32, dtype=torch.float16)
    groups = []
    for index, group in enumerate(config.get("kv_cache_groups", [{"kind": "full_attention"}])):
        kind = group["kind"]
        if kind == "full_attention":
            spec = FullAttentionSpec(**attention)
        elif kind == "sliding_window":
            spec = SlidingWindowSpec(**attention, sliding_window=group["window"])
        elif kind == "chunked_local":
            spec = ChunkedLocalAttentionSpec(**attention, attention_chunk_size=group["window"])
        elif kind == "mamba":
            # mamba_cache_mode 'none': one state block per request, a block as long as max_model_len.
            spec = MambaSpec(block_size=config["max_model_len"], shapes=((16,),), dtypes=(torch.float16,))
        else:
            raise ValueError(f"kv_cache_groups[{index}].kind: unknown {kind!r}")
        groups.append(KVCacheGroupSpec([f"layer.{index}"], spec))
    return groups


class FakeModel:
    """Samples token 1 for each scheduled request whose chunk reaches the end of its known tokens
    (and placeholders); with drafts scheduled, accepts them by servescope's `AcceptanceModel` (each
    position i with probability `acceptance_rate[i]`, stopping at the first rejection, from a draw
    seeded by (seed, request id, how many verifications that request has had))."""

    def __init__(self, acceptance: AcceptanceModel | None):
        self.acceptance = acceptance

    def num_accepted(self, request_id: str, num_drafts: int) -> int:
        return self.acceptance.num_accepted(request_id, num_drafts)

    def run(self, scheduler: Scheduler, output) -> tuple[ModelRunnerOutput, list[str], dict[str, int]]:
        """Decide this batch's tokens at schedule time, from the state schedule() left."""
        req_ids = list(output.num_scheduled_tokens)
        sampled_token_ids = []
        samplers = []
        accepted_by_request = {}
        for rid in req_ids:
            request = scheduler.requests[rid]
            if is_prefill_chunk(request):
                sampled_token_ids.append([])
                continue
            drafts = output.scheduled_spec_decode_tokens.get(rid, ())
            accepted = self.num_accepted(rid, len(drafts)) if drafts else 0
            if drafts:
                accepted_by_request[rid] = accepted
            sampled_token_ids.append([SAMPLED_TOKEN_ID] * (accepted + 1))
            samplers.append(rid)
        model_output = ModelRunnerOutput(req_ids=req_ids, req_id_to_index={rid: i for i, rid in enumerate(req_ids)},
                                         sampled_token_ids=sampled_token_ids)
        return model_output, samplers, accepted_by_request


def is_prefill_chunk(request: Request) -> bool:
    if hasattr(request, "is_prefill_chunk"):
        return request.is_prefill_chunk
    return request.num_computed_tokens < request.num_tokens  # releases before the flag existed


def make_requests(trace: dict, config: dict) -> list[tuple[int, dict]]:
    """(arrival_step, entry) in arrival order; ids as strings and priorities as ints, as vLLM types them."""
    entries = [{**e, "id": str(e["id"]), "priority": int(e.get("priority", 0))} for e in trace["requests"]]
    return sorted(((e["arrival_step"], e) for e in entries), key=lambda item: item[0])


class Recorder:
    def __init__(self, trace: dict, async_scheduling: bool, speculative_config: dict | None,
                 acceptance_rate: list[float], seed: int):
        self.config = trace["config"]
        self.scheduler = build_scheduler(self.config, async_scheduling, speculative_config)
        acceptance = None
        if speculative_config:
            spec = SpeculativeConfig.from_json({**speculative_config, "acceptance_rate": acceptance_rate,
                                                "acceptance_seed": seed})
            acceptance = AcceptanceModel(spec)
        self.model = FakeModel(acceptance)
        self.pending = deque(make_requests(trace, self.config))
        self.arrival_index = 0
        self.num_spec_tokens = (speculative_config or {}).get("num_speculative_tokens", 0)
        self.block_hasher = None
        # vLLM's own PrefixCacheStats summed over the run (not in the log; `prefix_stats.py` prints them).
        self.prefix_stats = dict.fromkeys(PREFIX_STATS, 0)
        # The output holds preemptions as a set; the log lists them in the order they happened.
        self.preempted_this_schedule: list[str] = []
        preempt = self.scheduler._preempt_request

        def observed_preempt(request, *args, **kwargs):
            self.preempted_this_schedule.append(request.request_id)
            return preempt(request, *args, **kwargs)

        self.scheduler._preempt_request = observed_preempt
        if self.config["enable_prefix_caching"]:
            from vllm.utils.hashing import sha256

            init_none_hash(sha256)
            # As EngineCore builds it: with an EAGLE drafter, 0.33 hashes each block with the token
            # after it (`num_hash_lookahead_tokens`); releases before lookahead hashes take two arguments.
            lookahead = getattr(self.scheduler.vllm_config, "num_hash_lookahead_tokens", 0)
            self.block_hasher = get_request_block_hasher(self.config["block_size"], sha256,
                                                         *((lookahead,) if lookahead else ()))

    def add_arrivals(self, step: int) -> list[str]:
        arrived = []
        while self.pending and self.pending[0][0] <= step:
            entry = self.pending.popleft()[1]
            params = SamplingParams(max_tokens=entry["max_tokens"], ignore_eos=True)
            self.scheduler.add_request(Request(
                entry["id"], list(entry["prompt_token_ids"]), params, None,
                arrival_time=step + 1e-6 * self.arrival_index, priority=entry["priority"],
                block_hasher=self.block_hasher))
            arrived.append(entry["id"])
            self.arrival_index += 1
        return arrived

    def free_blocks(self) -> int:
        return self.scheduler.kv_cache_manager.block_pool.get_num_free_blocks()

    def schedule(self):
        """schedule(), noting which admissions are first admissions and which resumptions (the
        output's own lists follow what the workers need, not the request's history)."""
        before = {request.request_id: request.status for request in self.waiting_requests()}
        output = self.scheduler.schedule()
        admitted = [rid for rid in output.num_scheduled_tokens if rid in before]
        self.new = [rid for rid in admitted if before[rid] == RequestStatus.WAITING]
        self.resumed = [rid for rid in admitted if before[rid] != RequestStatus.WAITING]
        return output

    def waiting_requests(self) -> list[Request]:
        scheduler = self.scheduler
        queues = [scheduler.waiting] + [getattr(scheduler, name) for name in ("kv_holding_waiting",) if hasattr(scheduler, name)]
        return [request for queue in queues for request in queue]

    def schedule_fields(self, output) -> dict:
        requests = self.scheduler.requests
        admitted = self.new + self.resumed
        fields = {
            "scheduled": dict(output.num_scheduled_tokens),
            "total_tokens": output.total_num_scheduled_tokens,
            "new": self.new,
            "resumed": self.resumed,
            # Tokens already computed at admission (prefix-cache hits).
            "cached_tokens": {rid: requests[rid].num_computed_tokens - output.num_scheduled_tokens[rid]
                              for rid in admitted},
            "preempted": self.preempted_this_schedule,
        }
        self.preempted_this_schedule = []
        return fields

    def update(self, output, model_output) -> dict:
        requests = self.scheduler.requests
        before = {rid: len(requests[rid].output_token_ids) for rid in model_output.req_ids if rid in requests}
        objects = {rid: requests[rid] for rid in before}
        engine_outputs = self.scheduler.update_from_output(output, model_output)
        for outputs in engine_outputs.values():
            stats = outputs.scheduler_stats.prefix_cache_stats if outputs.scheduler_stats else None
            for name in PREFIX_STATS if stats is not None else ():
                self.prefix_stats[name] += getattr(stats, name)
        sampled = [rid for rid, n in before.items() if len(objects[rid].output_token_ids) > n]
        finished = [o.request_id for outs in engine_outputs.values() for o in outs.outputs if o.finish_reason is not None]
        return {"sampled": sampled, "finished": finished}

    def gauges(self) -> dict:
        num_running, num_waiting = self.scheduler.get_request_counts()
        return {"num_free_blocks": self.free_blocks(),
                "kv_usage": round(self.scheduler.kv_cache_manager.usage, 6),
                "num_running": num_running, "num_waiting": num_waiting}

    def propose_drafts(self, output, samplers: list[str]) -> None:
        """The synchronous engine's post_step: the drafter proposes K tokens per request that sampled,
        unless the scheduler told the model runner to skip drafting (`skip_drafts`: every draft of the
        step would go unused; vLLM 0.33's V2 runner with a drafter that reserves lookahead slots)."""
        if not self.num_spec_tokens or not samplers or getattr(output, "skip_drafts", False):
            return
        from vllm.v1.outputs import DraftTokenIds

        self.scheduler.update_draft_token_ids(
            DraftTokenIds(samplers, [[DRAFT_TOKEN_ID] * self.num_spec_tokens for _ in samplers]))

    def run_sync(self):
        """One line per step: arrivals, schedule(), the model, update_from_output()."""
        step = 0
        while step == 0 or self.pending or self.scheduler.has_unfinished_requests():
            arrivals = self.add_arrivals(step)
            output = self.schedule()
            model_output, samplers, accepted = self.model.run(self.scheduler, output)
            line = {"step": step, "arrivals": arrivals, **self.schedule_fields(output)}
            free_after_schedule = self.free_blocks()
            update = self.update(output, model_output)
            if output.total_num_scheduled_tokens > 0:
                self.propose_drafts(output, update["sampled"])
            line.update(update)
            line["num_free_blocks_after_schedule"] = free_after_schedule
            line.update(self.gauges())
            if self.num_spec_tokens:
                # Fields added for speculative decoding, after today's: drafts verified this step
                # and how many of each request's were accepted.
                line["spec_tokens"] = {rid: len(t) for rid, t in output.scheduled_spec_decode_tokens.items()}
                line["accepted_tokens"] = accepted
            yield line
            step += 1

    def run_async(self, batch_queue_size: int = 2):
        """One line per pass of EngineCore.step_with_batch_queue: schedule a new batch if the queue
        has room; return at once if it was not full and there is more to do; else complete the
        oldest batch (update_from_output)."""
        queue: deque = deque()
        step = 0
        while True:
            arrivals = self.add_arrivals(step)
            line = {"step": step, "arrivals": arrivals, "scheduled": {}, "total_tokens": 0, "new": [], "resumed": [],
                    "cached_tokens": {}, "preempted": [], "sampled": [], "finished": []}
            scheduler = self.scheduler
            complete = True
            spec_tokens, accepted = {}, {}
            if scheduler.has_requests():
                output = self.schedule()
                model_output, _, accepted_now = self.model.run(scheduler, output)
                line.update(self.schedule_fields(output))
                spec_tokens = {rid: len(t) for rid, t in output.scheduled_spec_decode_tokens.items()}
                model_executed = output.total_num_scheduled_tokens > 0
                queue.appendleft((output, model_output, accepted_now))
                if len(queue) < batch_queue_size and (model_executed or scheduler.has_requests()):
                    complete = False
            elif not queue:
                complete = False
            line["num_free_blocks_after_schedule"] = self.free_blocks()
            if complete:
                output, model_output, accepted = queue.pop()
                # A request finished by an earlier batch's update has this batch's tokens ignored.
                accepted = {rid: n for rid, n in accepted.items() if rid in scheduler.requests}
                line.update(self.update(output, model_output))
            line.update(self.gauges())
            # Fields added for the async loop, after today's.
            line["num_batches_in_flight"] = len(queue)
            if self.num_spec_tokens:
                # With drafts (the drafter fills the placeholders the scheduler set): this pass's
                # schedule's drafts, and how many of each were accepted in the batch it completed.
                line["spec_tokens"] = spec_tokens
                line["accepted_tokens"] = accepted
            yield line
            if not self.pending and not scheduler.has_unfinished_requests():
                return  # the pass whose update finished the last request (or an empty trace's one pass)
            step += 1


def record_lines(trace_path: str, async_scheduling: bool = False, speculative_config: dict | None = None,
                 acceptance_rate: list[float] | None = None, acceptance_seed: int = 0) -> str:
    """The log of one run, as the text of a JSONL file."""
    return record_run(trace_path, async_scheduling, speculative_config, acceptance_rate, acceptance_seed)[0]


def record_run(trace_path: str, async_scheduling: bool = False, speculative_config: dict | None = None,
               acceptance_rate: list[float] | None = None, acceptance_seed: int = 0) -> tuple[str, dict]:
    """The log of one run, and vLLM's prefix-cache stats summed over it."""
    trace = load(trace_path)
    rate = acceptance_rate or trace.get("acceptance_rate") or []
    recorder = Recorder(trace, async_scheduling, speculative_config, rate, acceptance_seed)
    lines = recorder.run_async() if async_scheduling else recorder.run_sync()
    return "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines), recorder.prefix_stats


def write(path: str, text: str) -> None:
    if path.endswith(".gz"):
        write_gzip(path, text)
    else:
        Path(path).write_text(text)


def read(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def run_manifest(manifest_path: str, root: Path, check: bool, only: str | None) -> int:
    """Record (or, with --check, compare against the committed log) every run of the manifest
    made with the installed vLLM version."""
    failures = 0
    for run in json.loads(Path(manifest_path).read_text())["runs"]:
        if run["vllm"] != vllm.__version__ or (only and only not in run["out"]):
            continue
        text = record_lines(str(root / run["trace"]), run.get("async_scheduling", False),
                            run.get("speculative_config"), run.get("acceptance_rate"), run.get("acceptance_seed", 0))
        out = str(root / run["out"])
        if check:
            same = Path(out).exists() and read(out) == text
            failures += not same
            print(f"{'same' if same else 'DIFFERENT'}: {run['out']} ({text.count(chr(10))} lines)", flush=True)
        else:
            write(out, text)
            print(f"wrote {run['out']} ({text.count(chr(10))} lines)", flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", help="one trace to record (or use --manifest)")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--async-scheduling", action="store_true")
    parser.add_argument("--speculative-config", type=json.loads, default=None)
    parser.add_argument("--acceptance-rate", type=json.loads, default=None,
                        help="JSON list: probability of accepting draft position i")
    parser.add_argument("--acceptance-seed", type=int, default=0)
    parser.add_argument("--manifest", help="record every run listed in this JSON file (see fixtures.json)")
    parser.add_argument("--check", action="store_true", help="with --manifest: compare instead of writing")
    parser.add_argument("--only", help="with --manifest: only runs whose log name contains this")
    args = parser.parse_args(argv)
    if args.manifest:
        return run_manifest(args.manifest, Path(__file__).resolve().parents[2], args.check, args.only)
    text = record_lines(args.trace, args.async_scheduling, args.speculative_config, args.acceptance_rate,
                        args.acceptance_seed)
    write(args.out, text)
    print(f"vLLM {vllm.__version__}: wrote {text.count(chr(10))} lines to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
