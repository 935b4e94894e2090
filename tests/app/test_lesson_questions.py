"""A lesson's "Check yourself" questions travel with the lesson (GET /api/lessons/{name}), one list
per arm, each with its step, its units and its answer; reading them creates no session."""

from scheduler_core.lessons.catalog import LESSONS_BY_NAME
from tests.app.clients import app_client


def test_the_lesson_payload_carries_each_arms_questions_and_creates_no_session():
    with app_client() as client:
        detail = client.get("/api/lessons/memory-pressure").json()
        assert client.get("/api/sessions").json() == []
    assert set(detail["questions"]) == set(LESSONS_BY_NAME["memory-pressure"].arms)
    for arm, questions in detail["questions"].items():
        assert 2 <= len(questions) <= 3, arm
        for question in questions:
            assert {"step", "text", "units", "answer", "hint"} <= set(question)
            assert f"step {question['step']:,}" in question["hint"]
    preempted = next(q for q in detail["questions"]["recompute"] if q["moment"] == "first_preemption")
    assert preempted == {**preempted, "step": 20, "answer": "req-00017", "units": "request id"}
