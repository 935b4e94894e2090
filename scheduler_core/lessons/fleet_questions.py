"""Check yourself on a fleet lesson: two or three questions about moments the arm's story showed in
the fleet view (which replica a request went to, how many requests a replica held, how many of a
prompt's tokens hit a replica's cache), each answered by a fact `fleet_moments` recorded from the
fleet's own events, or, for the end, by the run's report. The same picker as the engine lessons'
(`check_yourself.in_rounds`); a question names its instant and the frame to seek to.
"""

from __future__ import annotations

from .check_yourself import Question, in_rounds
from .figures import FIGURES

# Where the fleet view shows an instant's numbers (move the time to it, then read there).
CARD = "{replica}'s card (running + waiting)"
CARDS = "the replicas' cards"
EVENTS = "the router and link events"
CAPTION = "its caption"

Q = Question
# By kind of moment, in the order their first questions are asked: the lesson's point first (what
# a routing policy makes of the caches, the balance it costs, what a split does to decode steps),
# the run's routed counts, the first route last.
QUESTIONS: dict[str, tuple[Question, ...]] = {
    "first_hit": (Q("At {t:.3f} s, how many of {request}'s prompt tokens hit {replica}'s prefix cache?", "hit", "tokens",
                    CAPTION),),
    "all_prompts": (Q("At {t:.3f} s, all {count} system prompts have arrived: how many copies of them has the router placed "
                      "over the replicas?", "placements", "copies", CAPTION),),
    "worst_imbalance": (Q("At {t:.3f} s, the fleet at its most uneven: how many requests (running and waiting) does "
                          "{replica} hold?", "busiest_n", "requests", CARD),),
    "first_transfer": (Q("At {t:.3f} s, how many KV blocks does {request}'s transfer move to the decode pool?", "blocks",
                         "blocks", CAPTION),
                       Q("At {t:.3f} s, which decode replica does {request}'s KV go to?", "decode", "replica", EVENTS)),
    "mixed_step": (Q("At {t:.3f} s, how many prompt tokens does {request}'s chunk put in {replica}'s step beside the "
                     "decodes?", "tokens", "tokens", CAPTION),),
    "slowest_decode_step": (Q("At {t:.3f} s, the slowest step with decodes in it: how many decodes does {replica} run in "
                              "it?", "decodes", "requests", CAPTION),),
    "first_token": (Q("At {t:.3f} s, in how many prompt chunks was {request}'s prompt computed?", "num_chunks",
                      "chunks", CAPTION, lambda facts: "num_chunks" in facts),
                    Q("At {t:.3f} s, which replica samples {request}'s first token?", "replica", "replica", EVENTS)),
    "cold_follower": (Q("At {t:.3f} s, round-robin sends {request} to {replica}, which holds none of its system prompt: "
                        "which replica did hold it?", "warm", "replica", CAPTION),),
    "first_eviction": (Q("At {t:.3f} s, which replica evicts cached blocks first?", "replica", "replica", CARDS),
                       Q("At {t:.3f} s, how many cached blocks are evicted?", "blocks", "blocks", CAPTION)),
    "end": (Q("When the run ends, how many requests has the busiest replica been sent?", "busiest_routed", "requests",
              "the cards' routed counts"),
            Q("When the run ends, which replica has been sent the most requests?", "busiest", "replica",
              "the cards' routed counts", lambda facts: facts["busiest_unique"])),
    "first_route": (Q("At {t:.3f} s, which replica does the router send {request} to?", "replica", "replica", EVENTS),),
}
ORDER = tuple(QUESTIONS)


def end_facts(found_end: dict, report: dict) -> dict:
    """The end beat's facts with the routed counts its cards show: every entry replica's share of
    the router's decisions (a decode replica's are its transfers, not asked about)."""
    decisions = report["router"]["decisions"]
    most = max(decisions.values())
    return {**found_end, "busiest_routed": most, "busiest": max(decisions, key=decisions.get),
            "busiest_unique": list(decisions.values()).count(most) == 1}


def fleet_check_yourself(beats: list[dict], report: dict) -> list[dict]:
    """Up to three questions on a fleet arm's story (`fleet_story`'s beats), in time order: one from
    each moment by ORDER, then second questions; the end asks two, so there are at least two."""
    told = [b if b["event"] != "end" else {**b, "facts": end_facts(b["facts"], report)}
            for b in beats if b["event"] in QUESTIONS]
    told.sort(key=lambda b: ORDER.index(b["event"]))
    asked = [[q for q in QUESTIONS[b["event"]] if q.when(b["facts"])] for b in told]
    return sorted((ask(beat, question) for beat, question in in_rounds(told, asked)), key=lambda q: q["frame"])


def ask(beat: dict, question: Question) -> dict:
    facts = beat["facts"]
    at = f"{facts['t']:.3f} s"
    return {"moment": beat["event"], "t": facts["t"], "frame": beat["frame"], "at": at,
            "request": facts.get("request"), "replica": facts.get("replica"),
            "text": FIGURES.format(question.text, **facts), "units": question.units, "measure": question.answer,
            "answer": facts[question.answer],
            "hint": f"Go to the beat at {at} and read {FIGURES.format(question.where, **facts)}."}
