"""`serve --policy-file`: the student's scheduler beside vLLM's at /lab. The file is named on the
command line only (refused with --public, a broken one is its file and line, not a traceback); the
page and its sessions exist only on a server started with one, and no request can name a file."""

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.main import create_app
from app.policy_file import attach_policy, load_policy
from app.settings import Settings
from tests.app.clients import step_session
from tests.paths import REPO

MISTAKES = REPO / "tests" / "lab" / "mistakes"
PREFILL_FIRST = str(MISTAKES / "prefill_first.py")


@pytest.fixture(scope="module")
def policy():
    return load_policy(PREFILL_FIRST, 3)


def lab_client(policy) -> TestClient:
    app = create_app(Settings(heartbeat_s=0.2, allowed_hosts=("testserver",)))
    return TestClient(attach_policy(app, policy))


def test_public_refuses_the_policy_file(capsys):
    assert main(["serve", "--public", "--policy-file", PREFILL_FIRST]) == 2
    err = capsys.readouterr().err
    assert "--policy-file: refused with --public" in err and "Traceback" not in err


def test_a_broken_file_is_its_file_and_line(capsys):
    assert main(["serve", "--policy-file", str(MISTAKES / "broken.py"), "--exercise", "3"]) == 2
    err = capsys.readouterr().err
    assert f"servescope: error: {MISTAKES / 'broken.py'}:9: KeyError in schedule() at step 1" in err
    assert "    return batch[view.waiting[0].request_id]" in err and "Traceback" not in err


def test_exercise_needs_a_policy_file(capsys):
    assert main(["serve", "--exercise", "3"]) == 2
    assert "--exercise: needs --policy-file" in capsys.readouterr().err


def test_without_a_policy_file_there_is_no_lab():
    client = TestClient(create_app(Settings(allowed_hosts=("testserver",))))
    assert client.get("/lab").status_code == 404
    assert client.get("/lab?exercise=3").status_code == 404
    assert client.post("/api/lab/sessions", json={"exercise": 3, "side": "yours"}).status_code == 404


def test_the_page_shows_the_first_divergence_in_the_labs_words(policy):
    page = lab_client(policy).get("/lab?exercise=3")
    assert page.status_code == 200
    d = policy.divergence
    assert (d.workload, d.step) == ("long-prompts", 2)
    assert f'data-step="{d.step}"' in page.text and "<strong>A</strong> is your scheduler (prefill_first.py)" in page.text
    assert "you gave req-7 and req-2 256 tokens before the running requests" in page.text


def test_no_request_names_a_file_or_another_exercise(policy):
    client = lab_client(policy)
    # Unknown query parameters are not read; the page is the same whatever a query names.
    same = client.get("/lab?exercise=3").text
    assert client.get(f"/lab?exercise=3&policy_file={MISTAKES / 'ignores_budget.py'}&file=/etc/passwd").text == same
    assert client.get("/lab?exercise=9").status_code == 422
    assert client.get("/lab?exercise=2").status_code == 404  # this server shows exercise 3
    for body in ({"exercise": 3, "side": "yours", "file": "/etc/passwd"}, {"exercise": 3, "side": str(PREFILL_FIRST)},
                 {"exercise": 0, "side": "vllm"}):
        answer = client.post("/api/lab/sessions", json=body)
        assert answer.status_code == 422, body
    # The lab's sides are not presets, lessons or scenarios of the ordinary API either.
    assert client.post("/api/sessions", json={"preset": "lab"}).status_code == 422


def test_both_sides_run_the_same_workload_and_part_at_the_divergence(policy):
    with lab_client(policy) as client:
        check_both_sides(client)


def check_both_sides(client):
    sides = {side: client.post("/api/lab/sessions", json={"exercise": 3, "side": side}).json() for side in ("yours", "vllm")}
    records = {side: step_session(client, created, 1) + step_session(client, created, 1) for side, created in sides.items()}
    # Step 1 is the same batch; step 2 (the divergence) is not.
    first, second = ({side: [tuple(c[:2]) for c in records[side][i]["scheduled"]] for side in records}
                     for i in (0, 1))
    assert first["yours"] == first["vllm"] and second["yours"] != second["vllm"]
    # Checkpoints pickle the student's scheduler: stepping back (a restore and a replay) works on its side too.
    yours = sides["yours"]
    with client.websocket_connect(f"/ws/{yours['session_id']}") as ws:
        ws.send_json({"type": "auth", "token": yours["control_token"]})
        ws.send_json({"type": "seek", "step": 1})
        for _ in range(50):
            if client.get(f"/api/sessions/{yours['session_id']}").json()["step"] == 1:
                break
            ws.receive()
    info = client.get(f"/api/sessions/{yours['session_id']}").json()
    assert info["step"] == 1 and info["scenario"]["name"].startswith("lab 3 · your scheduler")
    assert step_session(client, yours, 1)[0]["scheduled"] == records["yours"][1]["scheduled"]
    # A worker's replay rebuilds a run from the scenario, which is not a lab side's run: refused, not wrong.
    for created in sides.values():
        sid, token = created["session_id"], {"x-control-token": created["control_token"]}
        assert client.get(f"/api/sessions/{sid}/steps/0/why").status_code == 409
        assert client.get(f"/api/sessions/{sid}/export/steps.jsonl", headers=token).status_code == 409


@pytest.mark.parametrize("mistake,number,halt_at,why", [
    ("ignores_budget", 3, 0, "its next batch is one the engine cannot run"),
    ("no_preemption", 4, 4 * 343, "it has not finished after 1,372 steps"),
])
def test_the_students_side_stops_before_a_step_it_cannot_take(mistake, number, halt_at, why):
    policy = load_policy(str(MISTAKES / f"{mistake}.py"), number)
    assert policy.halt_at == halt_at and policy.halt_reason.startswith(why)
    sim = policy.simulation("yours")
    assert sim.run() == halt_at and sim.done
    with lab_client(policy) as client:
        assert f"Your side stops after {halt_at:,} steps: {why}" in client.get(f"/lab?exercise={number}").text
