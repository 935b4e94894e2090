"""The fleet lessons: every claim holds on the simulated numbers, and each arm opens in the fleet view."""

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from scheduler_core.cli.main import main
from scheduler_core.lessons.fleet import FLEET_LESSONS
from scheduler_core.lessons.framework import evaluate


@pytest.mark.slow
@pytest.mark.parametrize("lesson", FLEET_LESSONS, ids=lambda lesson: lesson.name)
def test_every_claim_holds(lesson):
    results = lesson.run()
    verdicts = evaluate(lesson, results)
    assert verdicts and all(holds for holds, _ in verdicts), [text for holds, text in verdicts if not holds]
    # The texts quote the numbers, not placeholders.
    assert not any("{" in text for _, text in verdicts)


def test_servescope_lesson_lists_and_runs_fleet_lessons(capsys):
    assert main(["lesson"]) == 0
    assert "routing-with-prefix-caches" in capsys.readouterr().out
    assert main(["lesson", "nonsense"]) == 2
    assert "routing-with-prefix-caches" in capsys.readouterr().err


@pytest.mark.slow
def test_a_lesson_arm_runs_in_the_fleet_view():
    with TestClient(create_app(Settings(allowed_hosts=("testserver",)))) as client:
        response = client.post("/api/fleet", json={"lesson": "disaggregation", "arm": "split"})
        assert response.status_code == 200
        run = response.json()
        assert [r["role"] for r in run["replicas"]] == ["prefill", "prefill", "decode", "decode"]
        assert run["name"] == "disaggregation:split"
        for body, field in (({"lesson": "nonsense"}, "lesson"), ({"lesson": "disaggregation", "arm": "x"}, "arm")):
            response = client.post("/api/fleet", json=body)
            assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", field]
        assert "routing-with-prefix-caches: prefix-aware" in client.get("/fleet").text
