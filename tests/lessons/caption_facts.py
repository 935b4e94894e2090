"""What a lesson's caption claims about the step on screen, and whether the screen agrees.

`read_caption` turns a caption's text into facts ("req-00017 is preempted" -> the request is in the
step's preempted list; "holds 21 blocks" -> its block table has 21 blocks; "(now at step 23)" ->
the step counter says 23). `mismatches` checks those facts against what the dashboard holds for the
step shown (`SCREEN` in tests/browser/test_every_arm_e2e.py gathers it from window.servescope.store
and the DOM). A claim the checker cannot verify is named by one of `UNVERIFIED`'s phrasings; a
request id, a block count or a number that neither a rule nor those phrasings account for is
reported as `unread`, so a new phrasing fails a test instead of passing unchecked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

N = r"(\d[\d,]*)"  # 4860 or 4,860: captions may carry thousands separators
PCT = r"(\d+(?:\.\d+)?)%"
ID = r"(req-\d+|r\d{2,})"  # the lessons' request ids: req-00017, or a recorded trace's r02


@dataclass(frozen=True)
class Fact:
    """One claim: `kind` names the check (see `CHECKS`), `request` the request it is about."""

    kind: str
    request: str | None = None
    value: int | float | str | None = None
    text: str = ""


def number(text: str) -> int | float:
    text = text.replace(",", "")
    return float(text) if "." in text else int(text)


# (kind, pattern): a group that matches a request id is the fact's request, the first other group its
# value, compared with what the screen shows (`CHECKS[kind]`); without a value the fact says the
# request is where the pattern puts it.
RULES: list[tuple[str, str]] = [
    ("beat", r"^(\d+)/\d+ "),
    ("beats", r"^\d+/(\d+) "),
    ("title", r"^\d+/\d+ ([^.]*)\."),
    ("now", rf"\(now at step {N}\)"),
    ("step", rf"\bStep {N}:"),
    # What the step did to a request: the lists of its record.
    ("admitted", rf"{ID}(?: \(priority \d\))? is admitted"),
    ("admitted", rf"{ID} arrived .*?\. Its \d+-token prompt waits for this step's batch"),
    ("admitted", rf"{ID}'s prompt matched \d+ cached blocks"),
    ("preempted", rf"{ID}(?: \(priority \d\))?(?:, the newest running request,)? is preempted"),
    ("preempted", rf"{ID} \(priority \d\) gives its blocks up"),
    ("computed", rf"{ID}, the newest running request, is preempted and restarts from token {N}"),
    ("finished", rf"{ID} finishe[sd]"),
    ("finished", rf"{ID}'s last token comes back in the step that computed it; it finishes"),
    ("resumed", rf"{ID} resumes"),
    ("scheduled", rf"{ID} \(priority \d\) runs on"),
    ("prefill", rf"{ID}'s [\d,]+-token prompt gets a chunk of {N} tokens"),
    ("prefill", rf"{ID} gets its next chunk, {N} tokens"),
    ("chunk_start", rf"{ID} gets its next chunk, [\d,]+ tokens from token {N}"),
    ("prefill", rf"{ID} runs a chunk of {N} of its"),
    ("prefill", rf"{ID}'s [\d,]+-token prompt is computed in chunks: {N} tokens now"),
    ("decode", rf"{ID}'s first decode was put in this batch"),
    ("decode", rf"{ID}'s last token \(\d+ of \d+\) is in this batch"),
    ("drafts", rf"{ID}'s decode carries {N} drafts"),
    ("accepted", rf"{ID} keeps {N} of its \d+ drafts"),
    ("all_accepted", rf"every one of {ID}'s \d+ drafts matches"),
    ("swapped_out", rf"{ID}, the newest running request, is preempted: its {N} blocks go to CPU memory"),
    ("cached_tokens", rf"{ID} is admitted with {N} tokens from the cache"),
    ("cached_tokens", rf"{ID} is admitted and {N} of its [\d,]+ prompt tokens hit the cache"),
    ("cached_tokens", rf"{ID} computes its \d+ tokens again in block \d+, allocated fresh\. {N} of its"),
    ("no_cached_tokens", rf"{ID} is admitted with nothing in the cache"),
    # What the request is: its view in the store.
    ("prompt", rf"{ID}'s {N}-token prompt"),
    ("prompt", rf"{ID} arrived .*?\. Its {N}-token prompt"),
    ("prompt", rf"{ID} is admitted(?: with a|,) {N}-token prompt"),
    ("prompt", rf"{ID} is admitted with a {N}-token prompt"),
    ("prompt", rf"{ID} runs a chunk of [\d,]+ of its {N} prompt tokens"),
    ("prompt", rf"{ID} is admitted and [\d,]+ of its {N} prompt tokens"),
    ("prompt", rf"{ID} (?:is admitted with 0 tokens from the cache: it )?computes its {N}-token prompt"),
    ("prompt", rf"{ID} is admitted and computes its {N}-token prompt"),
    ("prompt", rf"{ID} is admitted with nothing in the cache: it computes its {N}-token prompt"),
    ("prompt", rf"{ID} computes its \d+ tokens again in block \d+, allocated fresh\. [\d,]+ of its {N} prompt"),
    ("output", rf"{ID} finished after {N}(?: output)? tokens"),
    ("output", rf"{ID} finishes after {N} tokens"),
    ("output", rf"{ID}'s last token comes back in the step that computed it; it finishes after {N} tokens"),
    ("computed", rf"{ID} has computed {N} tokens"),
    ("output_back", rf"{ID}'s last token \(\d+ of \d+\) is in this batch; {N} are back"),
    ("remaining", rf"{ID}'s [\d,]+-token prompt gets a chunk of [\d,]+ tokens [^;]*; {N} prompt tokens wait for later"),
    ("remaining", rf"{ID} runs a chunk of [\d,]+ of its [\d,]+ prompt tokens; {N} remain"),
    ("remaining", rf"{ID}'s [\d,]+-token prompt is computed in chunks: [\d,]+ tokens now, {N} left"),
    # Where the request's blocks are: the KV panel's data.
    ("table", rf"{ID} is admitted with a [\d,]+-token prompt and holds {N} blocks"),
    ("table", rf"{ID} is admitted with a [\d,]+-token prompt that fills [\d,]+ blocks, and holds {N}\b"),
    ("table", rf"{ID} stays in Running with its {N} blocks"),
    ("table", rf"{ID} has computed [^.]*\. It holds {N} blocks over its two groups"),
    ("filled", rf"{ID} is admitted with a [\d,]+-token prompt that fills {N} blocks"),
    ("window_freed", rf"{ID} has computed [\d,]+ tokens; its sliding-window group gives back {N} blocks"),
    ("hit_blocks", rf"{ID} is admitted and [\d,]+ of its [\d,]+ prompt tokens hit the cache: {N} blocks shared"),
    ("no_table", rf"{ID} finished[^;]*; its (?:\d+ )?blocks (?:are free|go back)"),
    ("no_table", rf"{ID} finished and its blocks returned to the pool"),
    ("no_table", rf"{ID} finishes after \d+ tokens: its full-attention group's"),
    ("no_table", rf"{ID}'s last token comes back in the step that computed it; it finishes after \d+ tokens and its \d+ blocks"),
    ("freed", rf"{ID}'s last token comes back [^.]* its {N} blocks are free"),
    ("freed", rf"{ID} finished; its {N} blocks go back"),
    ("freed", rf"{ID} finishes after \d+ tokens: its full-attention group's {N} blocks return"),
    ("late_freed", rf"while {ID}'s last token was in flight, its {N} blocks still taken"),
    ("block_left_hit", rf"block {N} is dropped from the hit and {ID}"),
    ("block_fresh", rf"{ID} computes its \d+ tokens again in block {N}, allocated fresh"),
    ("evicted", rf"(?:{N} cached blocks? (?:are|is) evicted|the cache evicts {N} cached blocks?)"),
    ("used_blocks", rf"\d+ requests run at once in {N} blocks"),
    ("used_blocks", rf"\d+ requests hold {N} blocks"),
    # The step's gauges: its record, and the lanes' counts.
    ("kv", rf"in [\d,]+ blocks \({PCT} used\)"),
    ("kv", rf"blocks \({PCT} of the pool\)"),
    ("kv", rf"KV usage (?:is|reaches) {PCT}"),
    ("running", rf"with (?:only )?{N} requests running"),
    ("waiting", rf"\d+ requests running and {N} waiting"),
    ("running", rf"{N} requests run at once"),
    ("running", rf"A decode step of {N} touches"),
    ("running", rf"{N} requests hold [\d,]+ blocks"),
    ("waiting", rf"the most in this run; {N} wait"),
    ("running", rf"{N} requests run, every seat taken"),
    ("waiting", rf"every seat taken; {N} wait"),
    ("running", rf"all {N} requests run"),
    ("running", rf"only {N} of \d+ seats are busy"),
    ("seats", rf"only \d+ of {N} seats"),
    ("waiting", rf"seats are busy while {N} requests wait"),
    ("empty_seats", rf"requests wait: {N} empty seats"),
    ("running", rf"{N} others run on"),
    ("waiting", rf"others run on and {N} wait"),
    ("running", rf"the {N} running requests finish"),
    ("running", rf"{N} requests run to the end"),
    ("waiting", rf"{N} requests, preempted ones included, still wait"),
    ("admitted_count", rf"{N} requests are admitted at once"),
    ("decodes", rf"{N} decodes run first"),
    ("decodes", rf"\(blue, D: {N}\)"),
    ("decodes", rf"the decodes \(D: {N}\)"),
    ("budget_full", rf"fill the rest of the {N}-token budget"),
    # The configuration on screen: the session's facts.
    ("num_requests", rf"^{N} requests"),
    ("num_requests", rf"{N} (?:ShareGPT|Alpaca|Azure-conversation) requests"),
    ("num_gpu_blocks", rf"{N} (?:KV )?blocks(?: of \d+ tokens|, each a page of \d+ tokens)"),
    ("block_size", rf"[\d,]+ (?:KV )?blocks(?: of|, each a page of) {N} tokens"),
    ("num_gpu_blocks", rf"a pool of {N} blocks"),
    ("block_size", rf"a pool of [\d,]+ blocks of {N} tokens"),
    ("budget", rf"at most {N} tokens"),
    ("max_num_seqs", rf"Up to {N} run together"),
    ("max_num_seqs", rf"up to {N} requests"),
    ("max_num_seqs", rf"(?:Static batches of|admits a batch \()up to {N} requests"),
    ("max_model_len", rf"reserves max_model_len: {N} tokens"),
    ("max_model_len", rf"reserving max_model_len would set {N} tokens"),
    ("max_model_len", rf"Reserving {N} tokens each"),
    ("max_model_len", rf"reserving {N} tokens each"),
    ("max_model_len", rf"each reserving {N} tokens"),
    ("reserve_blocks", rf"max_model_len: [\d,]+ tokens, {N} blocks"),
    ("reserve_fit", rf"only {N} would fit"),
    ("reserve_fit", rf"contiguous KV \({N} fit in [\d,]+ blocks\)"),
    ("num_gpu_blocks", rf"contiguous KV \(\d+ fit in {N} blocks\)"),
    ("num_gpu_blocks", rf"into {N} blocks of \d+ tokens"),
    ("block_size", rf"into [\d,]+ blocks of {N} tokens"),
    ("num_gpu_blocks", rf"in a pool of {N} blocks"),
    ("num_requests", rf"(?:^|\b){N} requests of \d+ prompt"),
    ("num_requests", rf"% of {N} requests"),
    ("num_gpu_blocks", rf"vLLM's recorded scenario b: {N} blocks"),
    ("budget", rf"chunked prefill at {N} tokens"),
    ("budget", rf"Each step spends at most {N} tokens"),
    # Names on screen: a lane, a panel, a button.
    ("lane", r"(Running) and Waiting lanes"),
    ("lane", r"Running and (Waiting) lanes"),
    ("lane", r"the (preempted) lane"),
    ("in_lane", rf"{ID}, the newest running request, is preempted and restarts from token 0: it waits in the (Preempted) lane"),
    ("lane", r"stays in (Running)"),
    ("panel", r"watch the (KV grid)"),
    ("panel", r"(?:Watch|watch) (KV usage)"),
    ("panel", r"(?:Watch|watch) the (KV gauge)"),
    ("panel", r"\(orange in (the batch)\)"),
    ("panel", r"its (row) reads D 1\+3"),
    ("button", r"click '(Reserve max)'"),
]

# Phrasings the checker reads but does not verify, and why. Their numbers and ids count as read.
UNVERIFIED: list[tuple[str, str]] = [
    (r"a Preempted lane opens", "a lane that opens later in the run"),
    (r"\((?:orange|blue)\b", "a colour on screen"),
    (r"\(corner mark\)|\(dot\)", "a mark drawn on the KV canvas"),
    (r"its row reads D 1\+3", "the batch row's label (the batch panel's own tests read it)"),
    (r"[\d.]+ ms\b", "a time within a step: the record holds the step's, not the host's schedule"),
    (r"[\d.]+ GiB|[\d.]+B (?:active )?parameters|[\d.]+B active|[\d,]+ KV bytes a token|0\.9\d share"
     r"|0\.9\d of memory",
     "the model's and the GPU's memory (the configuration panel's own tests read it)"),
    (r"\d+ layers|\(\d+ sliding-window layers, \d+ full\)|last \d+ tokens' worth|\d+ clients|about [\d,]+ tokens",
     "the model's layout and the workload's shape"),
    (r"[\d,]+ (?:\w+ )?(?:conversations|requests)(?: from \d+ clients)?(?! run| hold| are| of| arrive)",
     "a workload's size in an opening"),
    (r"\d+ a second|at \d+/s", "the arrival rate"),
    (r"\d+ (?:EAGLE )?drafts?(?: tokens)?|proposes \d+ tokens|\d+ draft tokens|\d+ tokens checked"
     r"|\d+ tokens of the batch|\d+ tokens in one step|\d+ are kept",
     "a drafts count the draft rules check (first_draft's facts)"),
    (r"\d+(?:\.\d+)?% of \d+ requests are urgent|priority \d|P0", "a request's priority (its chip shows it)"),
    (r"(?:four )?[\d,]+-token system prompts(?: \(\d+ blocks\))?|[\d,]+ of its [\d,]+ prompt tokens hit instead of [\d,]+",
     "the workload's system prompts"),
    (r"prompt matched \d+ cached blocks", "the hit before the drafter's rule dropped its last block"),
    (r"computes its \d+ tokens again", "one block's tokens"),
    (r"having filled \d+ of its \d+ blocks", "a finished request's blocks, gone from the panel"),
    (r"\(\d+ of \d+\)", "the request's output length"),
    (r"not \d+\b", "what the request would hold without windows"),
    (r"[\d,]+ prompt and \d+ output tokens", "the workload's lengths"),
    (r"up to [\d,]+ tokens", "prefill-first's batch limit"),
    (r"vLLM(?: V0)?(?: \d+\.\d+(?:\.\d+)?)?|vLLM's|--max-num-seqs \d+|batches up to \d+|Llama-\d\.\d-\d+B"
     r"|gpt-oss-\d+b|H\d00|fp8|FP8",
     "a name"),
    (r"\d+ tokens,? (?:copied|from)|a few blocks of \d+ tokens|\d+ tokens of its own|blocks of \d+ tokens",
     "workload and engine shape"),
    (r"\d+ requests, a few running at a time|\d+ conversations", "a workload's size"),
]


@dataclass
class Caption:
    """The facts a caption claims, the phrasings it uses that are not verified, and what it names
    that no rule or phrasing read (a test fails on those)."""

    facts: list[Fact] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


# What must be read: request ids, and numbers (with what follows them, for the message).
MUST_READ = re.compile(rf"{ID}|\d[\d,.]*%?(?: \w+)?")


# The closing beat quotes every arm's results (tests/lessons check the claims made of them), not the step.
CLOSING = (r"\d[\d,.]*%?", "a result of the lesson's runs")


def read_caption(text: str, closing: bool = False) -> Caption:
    """The facts `text` claims; `closing`: the lesson's closing beat."""
    caption, read = Caption(), []
    text = text.replace("\u00a0", " ")
    for kind, pattern in RULES:
        regex = re.compile(pattern)
        for match in regex.finditer(text):
            groups = [(i, g) for i, g in enumerate(match.groups(), 1) if g is not None]
            request = next((g for _, g in groups if re.fullmatch(ID, g)), None)
            values = [(i, g) for i, g in groups if g != request]
            value = values[0][1] if values else None
            if value is not None and re.fullmatch(r"[\d,.]+", value):
                value = number(value)
            caption.facts.append(Fact(kind, request, value, match.group(0)))
            read += [match.span(i) for i, _ in groups]
    for pattern, _why in UNVERIFIED + ([CLOSING] if closing else []):
        for match in re.finditer(pattern, text):
            caption.unverified.append(match.group(0))
            read.append(match.span())
    for match in MUST_READ.finditer(text):
        start = match.start()
        if not any(a <= start < b for a, b in read):
            caption.unread.append(match.group(0))
    return caption


# -- checking the facts against the screen --------------------------------------------------
def _scheduled(screen: dict, rid: str) -> list | None:
    return next((c for c in screen["record"]["scheduled"] if c[0] == rid), None)


def _request(screen: dict, rid: str, key: str):
    view = screen["requests"].get(rid)
    return view[key] if view else None


def _decodes(screen: dict) -> int:
    return sum(1 for c in screen["record"]["scheduled"] if c[3] == "decode")


def _kv_percent(screen: dict) -> float:
    return round(screen["record"]["kv_usage"] * 100, 1)


def _at_least(shown: int, claimed: int) -> int:
    """The claim when the screen shows that many or more (blocks freed: also other requests')."""
    return claimed if shown >= claimed else shown


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# kind -> (what the screen shows for the fact, whether that agrees with the fact's value). The first
# is the figure a mismatch message quotes; `None` as the fact's value means "the request is there".
CHECKS = {
    "beat": lambda s, f: s["beat"] + 1,
    "beats": lambda s, f: s["beats"],
    "title": lambda s, f: s["beat_title"],
    "now": lambda s, f: s["step"],
    "step": lambda s, f: s["step"],
    "admitted": lambda s, f: f.request in s["record"]["admitted"],
    "preempted": lambda s, f: f.request in s["record"]["preempted"],
    "finished": lambda s, f: f.request in s["record"]["finished"],
    "resumed": lambda s, f: f.request in s["record"]["resumed"],
    "scheduled": lambda s, f: _scheduled(s, f.request) is not None and f.request in s["lanes"]["running"],
    "prefill": lambda s, f: (c := _scheduled(s, f.request)) and c[3] == "prefill" and c[1],
    "chunk_start": lambda s, f: (c := _scheduled(s, f.request)) and c[2],
    "decode": lambda s, f: (c := _scheduled(s, f.request)) is not None and c[3] == "decode",
    "drafts": lambda s, f: s["record"]["scheduled_spec_decode_tokens"].get(f.request),
    "accepted": lambda s, f: s["record"]["num_accepted_tokens"].get(f.request),
    "all_accepted": lambda s, f: s["record"]["num_accepted_tokens"].get(f.request)
    == s["record"]["scheduled_spec_decode_tokens"].get(f.request),
    "swapped_out": lambda s, f: dict(map(tuple, s["record"]["swapped_out"])).get(f.request),
    "cached_tokens": lambda s, f: s["record"]["cached_tokens"].get(f.request, 0),
    "no_cached_tokens": lambda s, f: s["record"]["cached_tokens"].get(f.request, 0) == 0,
    "prompt": lambda s, f: _request(s, f.request, "prompt"),
    "output": lambda s, f: _request(s, f.request, "output"),
    "computed": lambda s, f: _request(s, f.request, "computed"),
    "output_back": lambda s, f: _request(s, f.request, "output"),
    "remaining": lambda s, f: _request(s, f.request, "prompt") - _request(s, f.request, "computed"),
    "table": lambda s, f: len(s["tables"].get(f.request, [])),
    "filled": lambda s, f: _cdiv(_request(s, f.request, "computed"), s["session"]["block_size"]),
    "window_freed": lambda s, f: sum(group.count(0) for group in s["group_tables"].get(f.request, [])),
    "hit_blocks": lambda s, f: sum(1 for b in s["tables"].get(f.request, [])[:f.value] if s["cached"][str(b)]),
    "no_table": lambda s, f: f.request not in s["tables"],
    "freed": lambda s, f: _at_least(s["record"]["blocks_freed"], f.value),
    "late_freed": lambda s, f: _at_least(s["record"]["blocks_freed"], f.value),
    "block_left_hit": lambda s, f: f.value if f.value not in s["tables"].get(f.request, []) and s["cached"][str(f.value)]
    else f"{f.request}'s table {s['tables'].get(f.request)}, block cached: {s['cached'][str(f.value)]}",
    "block_fresh": lambda s, f: f.value if f.value in s["tables"].get(f.request, []) else s["tables"].get(f.request),
    "evicted": lambda s, f: s["record"]["blocks_evicted"],
    "used_blocks": lambda s, f: s["used_blocks"],
    "kv": lambda s, f: _kv_percent(s),
    "running": lambda s, f: s["record"]["running"] if s["record"]["running"] == s["lane_counts"]["running"] else
    f"record {s['record']['running']}, Running lane {s['lane_counts']['running']}",
    "waiting": lambda s, f: s["record"]["waiting"],
    "seats": lambda s, f: s["session"]["max_num_seqs"],
    "empty_seats": lambda s, f: s["session"]["max_num_seqs"] - s["record"]["running"],
    "admitted_count": lambda s, f: len(s["record"]["admitted"]),
    "decodes": lambda s, f: _decodes(s),
    "budget_full": lambda s, f: sum(c[1] for c in s["record"]["scheduled"]) if f.value == s["session"]["max_num_batched_tokens"]
    else f"a budget of {s['session']['max_num_batched_tokens']}",
    "num_requests": lambda s, f: s["session"]["num_requests"],
    "num_gpu_blocks": lambda s, f: s["session"]["num_gpu_blocks"],
    "block_size": lambda s, f: s["session"]["block_size"],
    "budget": lambda s, f: s["session"]["max_num_batched_tokens"],
    "max_num_seqs": lambda s, f: s["session"]["max_num_seqs"],
    "max_model_len": lambda s, f: s["session"]["max_model_len"],
    "reserve_blocks": lambda s, f: _cdiv(s["session"]["max_model_len"], s["session"]["block_size"]),
    "reserve_fit": lambda s, f: (s["session"]["num_gpu_blocks"] - 1)
    // _cdiv(s["session"]["max_model_len"], s["session"]["block_size"]),
    "in_lane": lambda s, f: f.value if f.request in s["lanes"].get(f.value.lower(), []) and s["lanes_visible"][f.value.lower()]
    else f"its {f.value} lane: {s['lanes'].get(f.value.lower())}",
    "lane": lambda s, f: f.value if s["lanes_visible"].get(f.value.lower()) else "no such lane on screen",
    "panel": lambda s, f: f.value if s["panels_visible"].get(f.value) else "not on screen",
    "button": lambda s, f: f.value if f.value in s["buttons_visible"] else "no such button on screen",
}
# The configuration on screen: true at every step of the session.
CONFIGURATION = {"num_requests", "num_gpu_blocks", "block_size", "budget", "max_num_seqs", "max_model_len", "reserve_blocks",
                 "reserve_fit", "seats"}
# Facts about the step a beat is bound to (its record, its requests), not true after it moves on.
OF_THE_BEAT = set(CHECKS) - CONFIGURATION - {"beat", "beats", "title", "now"}
# Facts read from the page, not from the step's record (which step 0 has none of).
ON_THE_PAGE = CONFIGURATION | {"beat", "beats", "title", "now", "step", "lane", "panel", "button"}


def mismatches(caption: Caption, screen: dict, at_beat: bool = True) -> list[str]:
    """What the caption claims that the screen does not show, one line each. Away from the beat's
    step (`at_beat` false), only "(now at step N)" and the configuration are checked."""
    wrong = []
    record = screen["record"]
    if at_beat and record is not None and record["step"] + 1 != screen["step"]:
        wrong.append(f"the record shown is iteration {record['step']}, not step {screen['step']}'s")
    for fact in caption.facts:
        if fact.kind not in CHECKS:
            raise KeyError(f"no check for {fact.kind!r}")
        if not at_beat and fact.kind in OF_THE_BEAT:
            continue
        if fact.kind not in ON_THE_PAGE and record is None:
            wrong.append(f"{fact.text!r}: no step record on screen")
            continue
        shown = CHECKS[fact.kind](screen, fact)
        if shown is not True if fact.value is None else shown != fact.value:
            wrong.append(f"{fact.text!r} ({fact.kind}): the screen shows {shown!r}")
    if not at_beat and not any(f.kind == "now" for f in caption.facts):
        wrong.append(f"no '(now at step {screen['step']:,})' away from the beat")
    return wrong


def named(caption: Caption) -> tuple[list[str], list[int]]:
    """The request ids and block ids the caption's facts name: what the screen must be asked for."""
    ids = sorted({f.request for f in caption.facts if f.request})
    blocks = sorted({f.value for f in caption.facts if f.kind in ("block_left_hit", "block_fresh")})
    return ids, blocks
