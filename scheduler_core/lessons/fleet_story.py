"""A fleet lesson's story: captions bound to the fleet moments of one arm's run.

Like a single-engine lesson's beats (`scheduler_core.lessons.framework.Beat`), but bound to an instant of
simulated time instead of a step: each beat is placed at its moment (`fleet_moments`), quotes the
moment's facts, and points at the frame pinned there, so the fleet view shows the fleet at that
very instant. An opening quotes the arm's fleet; the end quotes every arm's results.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cluster.kv_transfer import LINKS
from ..cluster.scenario import ClusterScenario
from .figures import FIGURES
from .fleet_moments import LINK_TITLES, MOMENT_KINDS
from .framework import fill


@dataclass(frozen=True)
class FleetBeat:
    """A caption bound to "opening", "end" or a kind of fleet moment; `{fact}` placeholders quote the
    moment's facts (the opening: the arm's fleet), the end's `{arm:path:format}` every arm's results."""

    event: str
    title: str
    text: str
    arms: tuple[str, ...] = ()  # the arms whose story it belongs to; empty: every arm

    def __post_init__(self):
        if self.event not in ("opening", "end", *MOMENT_KINDS):
            raise ValueError(f"beat {self.title!r}: unknown moment {self.event!r}")


def opening_facts(fleet: ClusterScenario) -> dict:
    """What the opening caption says about an arm: its workload, its replicas and their memory."""
    workload = fleet.scenario.workload
    entry = fleet.prefill if fleet.disaggregated else fleet.scenario
    engine = entry.engine
    prompt_blocks = max(1, workload.shared_prefix_len // engine.block_size)
    link = LINKS[fleet.link]
    return {"t": 0.0, "num_requests": workload.num_requests, "rate": workload.arrival_rate,
            "prompt_len": workload.prompt_len, "output_len": workload.output_len,
            "shared_prefix_len": workload.shared_prefix_len, "num_shared_prefixes": workload.num_shared_prefixes,
            "prompt_blocks": prompt_blocks, "num_gpu_blocks": engine.num_gpu_blocks,
            "prompts_fit": engine.num_gpu_blocks // prompt_blocks, "budget": engine.max_num_batched_tokens,
            "replicas": fleet.replicas, "num_gpus": fleet.num_gpus, "gpu": fleet.scenario.gpu.upper(),
            "prefill_replicas": fleet.prefill_replicas, "decode_replicas": fleet.decode_replicas,
            "link_title": LINK_TITLES.get(fleet.link, fleet.link), "link_gb_s": link.bandwidth / 1e9}


def fleet_story(beats: list[FleetBeat], arm: str, fleet: ClusterScenario, found: dict[str, dict], results: dict,
                frames: list[dict]) -> list[dict]:
    """The beats of `arm`'s run in time order, each with its instant, the index of its frame, its
    moment's facts and its text filled in; a beat whose moment never happens in this run is left out."""
    pinned = {frame["moment"]: index for index, frame in enumerate(frames) if "moment" in frame}
    story = []
    for beat in beats:
        if beat.arms and arm not in beat.arms:
            continue
        if beat.event == "opening":
            facts, frame = opening_facts(fleet), 0
            text = FIGURES.format(beat.text, **facts)
        elif beat.event == "end":
            facts, text, frame = found["end"], fill(beat.text, results), len(frames) - 1
        elif beat.event in found:
            facts, frame = found[beat.event], pinned[beat.event]
            text = FIGURES.format(beat.text, **facts)
        else:
            continue
        story.append({"event": beat.event, "t": facts["t"], "frame": frame, "title": beat.title, "text": text,
                      "facts": facts})
    story.sort(key=lambda b: b["frame"])
    return story
