"""Check yourself: two or three questions at the end of a lesson about the run the class watched.

Each question names a moment the arm's beats put on screen (a step, often a request), asks for one
number or one request id, and says where the dashboard shows it at that step. Its answer is a fact
the story recorded from that step's record (events.py), so it is the arm's own run, read back:
the same configuration and seed give the same questions and the same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .figures import FIGURES

# Where the dashboard shows a step's numbers (seek to the step, then read there).
BATCH = "the batch panel's header (tokens of the budget, requests)"
EVENTS = "the events log"
QUEUES = "the queues (running and waiting counts)"
CHUNKS = "the batch panel's rows (or the events log with 'prefill chunks' ticked)"
DECODES = "the batch panel's legend (D decode: one token for each decode)"
DRAFTS = "the batch panel's rows (1+drafts tok; hover a row for how many were accepted)"
KV = "the KV panel (click the request for its block table)"
STEP = "the step counter after the last step"


def only_one(count: str) -> Callable[[dict], bool]:
    """A "which request" question has one answer only when the step did that to one request."""
    return lambda facts: facts.get(count) == 1


def more_than_one(count: str) -> Callable[[dict], bool]:
    """A step's count of 0 or 1 (one token scheduled, one request finished) is what most steps look
    like: it teaches nothing about the arm, so it is not asked."""
    return lambda facts: facts.get(count, 0) > 1


@dataclass(frozen=True)
class Question:
    """One question about a kind of moment: `text` quotes the moment's facts, the fact named by
    `answer` answers it (in `units`), `where` is the panel that shows it, and `when` says whether
    the moment's facts make the answer one exact value."""

    text: str
    answer: str
    units: str
    where: str
    when: Callable[[dict], bool] = lambda facts: True


Q = Question
WHICH_PREEMPTED = Q("In step {step} the KV cache ran out of blocks. Which request was preempted?", "request", "request id",
                    EVENTS, only_one("num_preempted"))
HOW_MANY_PREEMPTED = Q("How many requests were preempted in step {step}?", "num_preempted", "requests", EVENTS)
RUNNING = Q("After step {step}, how many requests are running?", "running", "requests", QUEUES)
WAITING = Q("After step {step}, how many requests are still waiting?", "waiting", "requests", QUEUES)
HOW_MANY_FINISHED = Q("How many requests finished in step {step}?", "num_finished", "requests", EVENTS,
                      more_than_one("num_finished"))
CHUNK = Q("In step {step}, how many tokens was {request}'s prefill chunk?", "tokens", "tokens", CHUNKS)

# By kind of moment, the most telling question first.
QUESTIONS: dict[str, tuple[Question, ...]] = {
    "first_chunk": (CHUNK,),
    "mixed_chunk": (CHUNK, Q("How many decodes shared step {step} with {request}'s prefill chunk?", "decodes", "requests",
                             DECODES)),
    "next_chunk": (Q("In step {step}, {request}'s next prefill chunk starts after how many computed tokens of its prompt?",
                     "start", "tokens", CHUNKS),),
    "budget_full": (Q("In step {step} the token budget is spent in full: how many decodes are in that batch?", "decodes",
                      "requests", DECODES),),
    "batch_full": (RUNNING,),
    "peak_running": (Q("At most how many requests run at once (first reached at step {step})?", "running", "requests",
                       QUEUES),),
    "first_finish": (Q("Which request finished first, in step {step}?", "request", "request id", EVENTS,
                       only_one("num_finished")), HOW_MANY_FINISHED),
    "seat_left_empty": (Q("Which request finished in step {step}, leaving its seat in the static batch empty?", "request",
                          "request id", EVENTS, only_one("num_finished")),),
    "seats_empty": (Q("After step {step}, how many seats of the batch sit empty while requests wait?", "empty", "seats",
                      QUEUES),),
    "refill": (Q("In step {step} the static batch refills: how many requests are admitted?", "num_admitted", "requests",
                 EVENTS),),
    "kv_high": (RUNNING, WAITING),
    "first_preemption": (WHICH_PREEMPTED, HOW_MANY_PREEMPTED),
    "repeat_preemption": (Q("Which request was preempted for the second time in step {step}?", "request", "request id",
                            EVENTS, only_one("num_preempted")),),
    "first_priority_victim": (WHICH_PREEMPTED, Q("What priority does the request preempted in step {step} have?",
                                                 "priority", "priority (0 is urgent)", QUEUES, only_one("num_preempted"))),
    "first_resume": (Q("Which request resumed after its preemption in step {step}?", "request", "request id", EVENTS,
                       only_one("num_resumed")),),
    "first_swap": (Q("In step {step}, how many blocks did {request} swap out to CPU memory?", "blocks", "blocks", EVENTS),),
    "first_hit": (Q("In step {step}, how many of {request}'s prompt tokens hit the prefix cache?", "tokens", "tokens",
                    EVENTS),),
    "first_eviction": (Q("How many cached blocks were evicted from the prefix cache in step {step}?", "blocks", "blocks",
                         EVENTS),),
    "first_window_release": (Q("In step {step}, how many blocks did {request}'s sliding-window group give back?", "blocks",
                               "blocks", KV),),
    "first_hit_block_dropped": (Q("In step {step}, how many of {request}'s prompt tokens still hit the prefix cache after "
                                  "the drafter dropped its last matched block?", "tokens", "tokens", EVENTS),),
    "first_urgent": (WAITING,),
    "queue_drained": (RUNNING,),
    "first_draft": (Q("In step {step}, how many draft tokens does {request} verify?", "drafts", "tokens", DRAFTS),),
    "first_rejection": (Q("In step {step}, how many of {request}'s {drafts} draft tokens were accepted?", "accepted",
                          "tokens", DRAFTS),),
    "first_full_accept": (Q("In step {step} all of {request}'s drafts were accepted: how many tokens did it gain?", "gained",
                            "tokens", DRAFTS),),
    "missed_batch": (Q("Which request, arriving while the batch was already chosen, was admitted in step {step}?",
                       "request", "request id", EVENTS, only_one("num_admitted")),),
    "last_token_in_flight": (Q("After step {step}, how many blocks does {request} hold while its last token is in flight?",
                               "blocks", "blocks", KV),),
    "late_release": (Q("Which request finished in step {step} without being in that step's batch?", "request",
                       "request id", EVENTS, only_one("num_finished")),),
    "end": (Q("In which step did the last request finish?", "step", "step", STEP), HOW_MANY_FINISHED),
}
# Any moment's step (the first admission's among them): the total the batch panel's header shows.
ANY = Q("How many tokens did the engine schedule in step {step}?", "batched_tokens", "tokens", BATCH,
        more_than_one("batched_tokens"))
# Moments every lesson has: its questions come after those of the lesson's own moments.
BACKGROUND = ("first_admit", "first_finish", "peak_running", "queue_drained", "batch_full", "end")
# Moments every run has, in the order they are asked about when the arm's story did not tell them (an
# arm whose story is only an opening and a result): how many run at once says what the arm's memory
# and max_num_seqs allow, the first finish and the first step how it starts.
UNTOLD = ("peak_running", "batch_full", "first_finish", "first_admit", "queue_drained")
MAX_QUESTIONS = 3


def check_yourself(beats: list[dict], found: dict[str, dict] | None = None) -> list[dict]:
    """Up to three questions on an arm's story (its beats, as `framework.story` gives them), in step
    order: first one question from each of the lesson's own moments, then one from the moments every
    lesson has, then from the run's moments (`found`: the arm's `StoryEvents`) its story did not
    tell, then second questions. The end beat always asks one, so there are at least two."""
    told = [b for b in beats if b["event"] != "opening"]
    told.sort(key=lambda b: (b["event"] in BACKGROUND, b["event"] == "end", b["step"]))
    events = {b["event"] for b in told}
    told += [{"event": kind, "facts": (found or {})[kind]} for kind in UNTOLD
             if kind in (found or {}) and kind not in events]
    asked = [[q for q in (*QUESTIONS.get(b["event"], ()), ANY) if q.when(b["facts"])] for b in told]
    return sorted((ask(beat, question) for beat, question in in_rounds(told, asked)), key=lambda q: q["step"])


def in_rounds(told: list[dict], asked: list[list[Question]]) -> list[tuple[dict, Question]]:
    """The first question of each beat (in `told`'s order), then each one's second, ..., up to
    MAX_QUESTIONS; a question that asks for a measure at a moment an earlier pick asked it at (the
    running count of one step, as the peak and a full batch would both) is passed over."""
    picked: list[tuple[dict, Question]] = []
    seen = set()
    for round_ in range(max(map(len, asked), default=0)):
        for beat, questions in zip(told, asked):
            if round_ < len(questions) and len(picked) < MAX_QUESTIONS:
                question = questions[round_]
                same = (beat["facts"].get("step", beat["facts"].get("t")), question.answer)
                if same not in seen:
                    seen.add(same)
                    picked.append((beat, question))
    return picked


def ask(beat: dict, question: Question) -> dict:
    facts = beat["facts"]
    return {"moment": beat["event"], "step": facts["step"], "text": FIGURES.format(question.text, **facts),
            "request": facts["request"] if "{request}" in question.text else None,
            "units": question.units, "measure": question.answer, "answer": facts[question.answer],
            "hint": f"Seek to step {facts['step']:,} and read {question.where}."}
