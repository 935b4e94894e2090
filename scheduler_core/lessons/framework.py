"""Guided scenarios: each claim about serving engines, demonstrated on the simulation.

A lesson runs one workload through two or more configurations (its arms), measures what the
claim is about, and states the claim as a check on those numbers. The narration shown in the
dashboard is filled in from the same numbers, so it cannot drift from what the simulation does;
tests/lessons/test_lessons.py asserts every claim.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..engine.kv_events import HitBlockDropped
from ..scenario.scenario import Scenario
from ..sim.capacity import KVCapacity
from ..sim.simulation import Simulation
from ..timing.memory import GIB, MemoryPlan
from ..timing.model_summary import model_summary
from ..timing.presets import resolve_gpu
from ..utils import cdiv
from .events import EVENT_KINDS, StoryEvents
from .figures import FIGURES

# The dashboard's panels a beat can put on stage.
PANELS = ("queues", "batch", "kv", "charts", "side")


@dataclass
class ArmResult:
    """One arm's run: its metrics report and the measures the lessons talk about."""

    label: str
    report: dict
    num_steps: int = 0
    peak_running: int = 0
    scheduled_tokens: int = 0
    useful_tokens: int = 0  # prompt + output tokens of the requests: what must be computed at least
    recomputed_tokens: int = 0
    swapped_blocks: int = 0
    swap_s: float = 0.0
    evicted_blocks: int = 0
    peak_shared_blocks: int = 0
    # Admissions whose prefix-cache hit lost its last block to an EAGLE/MTP drafter (HitBlockDropped).
    dropped_hit_blocks: int = 0
    drained_steps: int = 0  # steps with requests waiting while the batch had free seats
    # Async scheduling: finishes in a pass whose batch was scheduled without the request (its last
    # token was still in flight), and the blocks those requests held through that schedule.
    late_releases: int = 0
    late_release_blocks: int = 0
    # The host's work (scheduling, input preparation, output processing) over the steps that
    # scheduled a batch: what the GPU waits for under synchronous scheduling, and async scheduling hides.
    host_s: float = 0.0
    host_s_max: float = 0.0
    batch_steps: int = 0
    preemptions_by_request: Counter = field(default_factory=Counter)
    victims_were_newest: bool = True  # FCFS: each victim was the last admitted running request
    victims_were_lowest_priority: bool = True  # each victim ranked lowest of the running requests
    victim_priorities: Counter = field(default_factory=Counter)
    ttft_by_priority: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)  # story moment -> its step and facts (lesson_events)
    memory: dict = field(default_factory=dict)  # vLLM's startup memory figures for the arm (memory.MemoryPlan)
    model: dict = field(default_factory=dict)  # the arm's model: parameters, weights, KV per group (model_figures)
    capacity: dict = field(default_factory=dict)  # its clients' conversations against the KV cache (sim.capacity)

    @property
    def preemptions(self) -> int:
        return self.report["preemptions"]

    @property
    def max_preemptions_of_one_request(self) -> int:
        return max(self.preemptions_by_request.values(), default=0)

    @property
    def host_ms_per_step(self) -> float:
        return 1e3 * self.host_s / self.batch_steps if self.batch_steps else 0.0

    @property
    def host_ms_max(self) -> float:
        return 1e3 * self.host_s_max

    @property
    def work_ratio(self) -> float:
        return self.scheduled_tokens / self.useful_tokens if self.useful_tokens else 0.0

    def get(self, path: str):
        """A number by dotted path: `report.ttft_s.p99`, `peak_running`, `ttft_by_priority.0`, ..."""
        return value_at(self, path)


def value_at(result, path: str):
    """The attribute named by the path's head, then keys (digits index lists) into what it holds."""
    head, *keys = path.split(".")
    value = getattr(result, head)
    for key in keys:
        value = value[int(key)] if key.isdigit() else value[key]
    return value


def run_arm(label: str, sim: Simulation) -> ArmResult:
    result = ArmResult(label, {})
    max_num_seqs = sim.config.max_num_seqs
    admitted_order: list[str] = []  # running requests in admission order (FCFS victims come from the end)
    story = StoryEvents(sim)
    record = None
    for record in sim.records():
        story.observe(record)
        result.num_steps += 1
        result.peak_running = max(result.peak_running, record.num_running)
        result.scheduled_tokens += record.num_batched_tokens
        result.evicted_blocks += record.num_blocks_evicted
        result.swapped_blocks += sum(n for _, n in record.swapped_out) + sum(n for _, n in record.swapped_in)
        result.swap_s += record.cost_breakdown.get("swap", 0.0)
        if record.scheduled:
            result.batch_steps += 1
            host_s = sim.host_time.seconds(len(record.scheduled))
            result.host_s += host_s
            result.host_s_max = max(result.host_s_max, host_s)
        for rid in record.preempted:
            result.preemptions_by_request[rid] += 1
            priority = sim.request(rid).priority
            if admitted_order and admitted_order[-1] != rid:
                result.victims_were_newest = False
            if any(sim.request(other).priority > priority for other in admitted_order):
                result.victims_were_lowest_priority = False
            result.victim_priorities[priority] += 1
            if rid in admitted_order:
                admitted_order.remove(rid)
        joined = set(record.admitted) | set(record.resumed)
        result.dropped_hit_blocks += len({e.request_id for e in record.kv_events
                                          if isinstance(e, HitBlockDropped) and e.request_id in joined})
        # In the order the scheduler admitted them, which interleaves resumed and new requests.
        admitted_order.extend(c.request_id for c in record.scheduled if c.request_id in joined)
        for rid in record.finished:
            if rid in record.preempted:
                # Async scheduling: preempted by this pass's schedule while its prompt's step was in
                # flight, which came back with its last token; its blocks went with the preemption.
                continue
            admitted_order.remove(rid)
            if all(c.request_id != rid for c in record.scheduled):
                result.late_releases += 1
                result.late_release_blocks += cdiv(sim.request(rid).num_computed_tokens, sim.config.block_size)
        if record.num_waiting and record.num_running < max_num_seqs and not (record.admitted or record.resumed):
            result.drained_steps += 1
        result.peak_shared_blocks = max(result.peak_shared_blocks, sim.kv_view().num_shared_blocks())
    result.events = story.finish(record)
    result.report = sim.metrics.report()
    ttfts: dict[int, list[float]] = {}
    for request in sim.finished_requests.values():
        result.useful_tokens += request.num_prompt_tokens + request.num_output_tokens
        ttfts.setdefault(request.priority, []).append(request.token_times[0] - request.arrival_time)
    result.ttft_by_priority = {p: sorted(v)[len(v) // 2] for p, v in ttfts.items()}
    # Tokens computed beyond each request's prompt and output once: the price of recompute preemption.
    result.recomputed_tokens = result.scheduled_tokens - result.useful_tokens + result.report["num_requests"]
    return result


@dataclass(frozen=True)
class Claim:
    """A sentence with {placeholders} filled from arm results (`{arm.path}`), and its check."""

    text: str
    check: Callable[[dict[str, ArmResult]], bool]


@dataclass(frozen=True)
class Beat:
    """A caption bound to a moment of the run: "opening", "end", or a kind from lesson_events.

    Its text quotes the moment's facts (`{request}`, `{tokens}`, `{kv}`, ...; the opening quotes
    the arm's configuration, the end quotes every arm's results as `{arm:path:format}`); `stage`
    names the two or three panels that matter while it is up.
    """

    event: str
    title: str
    text: str
    stage: tuple[str, ...] = ("queues", "batch", "kv")
    arms: tuple[str, ...] = ()  # the arms whose story it belongs to; empty: every arm

    def __post_init__(self):
        if not 2 <= len(self.stage) <= 3 or not set(self.stage) <= set(PANELS):
            raise ValueError(f"beat {self.title!r}: stage {self.stage} must name 2-3 of {PANELS}")
        if self.event not in ("opening", "end", *EVENT_KINDS):
            raise ValueError(f"beat {self.title!r}: unknown moment {self.event!r}")


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    summary: str
    arms: dict[str, dict]  # label -> scenario data
    claims: list[Claim]
    beats: list[Beat]  # the story, told on the first arm: an opening, moments, the end
    columns: list[tuple[str, str, str]]  # (label, path, format) for the comparison table

    def scenario(self, arm: str) -> Scenario:
        """The arm's run. Lessons teach the engine core's decisions, so they run it as `LLM.generate`
        does, without vLLM's API server in front (sim/api_server.py), unless an arm says otherwise."""
        return Scenario.from_dict({"entrypoint": "offline", **copy.deepcopy(self.arms[arm])}, name=f"{self.name}:{arm}")

    def simulation(self, arm: str) -> Simulation:
        return self.scenario(arm).build()

    def run(self) -> dict[str, ArmResult]:
        results = {}
        for label in self.arms:
            scenario = self.scenario(label)
            sim = scenario.build()
            results[label] = run_arm(label, sim)
            plan = scenario.memory_plan()
            results[label].memory = plan.to_dict()
            results[label].capacity = KVCapacity.of(sim.workload, sim.config, plan.kv_cache_size_tokens).to_dict()
            results[label].model = model_figures(scenario, plan)
        return results


def model_figures(scenario: Scenario, plan: MemoryPlan) -> dict:
    """The arm's model as the configuration panel shows it (timing/model_summary.py), in the units a
    caption quotes (billions of parameters, GiB), and the tokens its KV cache would hold if every
    attention layer kept every token: what sliding windows and state layers are measured against."""
    summary = model_summary(scenario.model_spec(), resolve_gpu(scenario.gpu), scenario.tensor_parallel_size)
    per_token = summary["kv_bytes_per_token_all_layers"]
    return {**summary, "total_params_b": summary["total_params"] / 1e9, "active_params_b": summary["active_params"] / 1e9,
            "weights_gib": summary["weights_bytes_per_gpu"] / GIB,
            "kv_tokens_without_windows": max(0, plan.kv_cache_bytes) // per_token if per_token else 0}


def fill(text: str, results: dict[str, ArmResult]) -> str:
    """Replace `{arm:path:format}` with the number the simulation produced; `{a/b:path:format}` is
    arm a's number over arm b's (how many times faster, say)."""
    out, rest = [], text
    while "{" in rest:
        before, _, tail = rest.partition("{")
        spec, _, rest = tail.partition("}")
        arm, path, fmt = (spec.split(":", 2) + [""])[:3]
        numerator, _, denominator = arm.partition("/")
        value = results[numerator].get(path)
        if denominator:
            value /= results[denominator].get(path)
        out.append(before + FIGURES.format_field(value, fmt))
    return "".join(out) + rest


def story(lesson: Lesson, arm: str, results: dict[str, ArmResult]) -> list[dict]:
    """The beats of `arm`'s run in step order, each with its step, its moment's facts and its
    text filled in; a beat whose moment never happens in this arm is left out."""
    scenario = lesson.scenario(arm)
    engine = scenario.engine
    opening = {**{k: getattr(engine, k) for k in ("num_gpu_blocks", "block_size", "max_num_batched_tokens", "max_num_seqs",
                                                   "max_model_len")},
               "num_requests": results[arm].report["num_requests"],
               "arrival_rate": scenario.workload.arrival_rate,
               "reserve_blocks": cdiv(engine.max_model_len, engine.block_size),
               "reserve_fit": (engine.num_gpu_blocks - 1) // cdiv(engine.max_model_len, engine.block_size),
               "step": 0}
    beats = []
    for beat in lesson.beats:
        if beat.arms and arm not in beat.arms:
            continue
        if beat.event == "opening":
            facts = opening
            text = FIGURES.format(beat.text, **facts)
        elif beat.event == "end":
            facts = results[arm].events.get("end")
            text = fill(beat.text, results) if facts else None
        else:
            facts = results[arm].events.get(beat.event)
            text = FIGURES.format(beat.text, **{**opening, **facts}) if facts else None
        if text is not None and all(b["step"] != facts["step"] for b in beats):  # one beat per step
            beats.append({"event": beat.event, "step": facts["step"], "title": beat.title, "text": text,
                          "stage": list(beat.stage), "facts": facts})
    beats.sort(key=lambda b: (b["step"], b["event"] == "end"))
    return beats


def comparison_table(lesson: Lesson, results: dict[str, ArmResult]) -> str:
    labels = list(results)
    width = max(12, *(len(label) for label in labels))
    lines = [f"  {'':<30}" + "".join(f"{label:>{width + 2}}" for label in labels)]
    for title, path, fmt in lesson.columns:
        cells = "".join(f"{format(results[label].get(path), fmt):>{width + 2}}" for label in labels)
        lines.append(f"  {title:<30}{cells}")
    return "\n".join(lines)


def evaluate(lesson: Lesson, results: dict[str, ArmResult]) -> list[tuple[bool, str]]:
    return [(bool(claim.check(results)), fill(claim.text, results)) for claim in lesson.claims]


def claims_slide(lesson, results: dict) -> dict:
    """What "What it proves" shows, for a lesson or a fleet lesson: each claim checked, and the table."""
    return {
        "claims": [{"holds": holds, "text": text} for holds, text in evaluate(lesson, results)],
        "table": {"arms": list(results), "rows": [
            {"label": label, "values": [format(results[arm].get(path), fmt) for arm in results]}
            for label, path, fmt in lesson.columns]},
    }
