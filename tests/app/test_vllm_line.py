"""A pasted `vllm serve` line becomes the configuration form's scenario, through the CLI's parser and
the one validation path: bad flags and values are a 422 naming them."""

import pytest

from tests.app.clients import app_client

FORM = {"engine": {"num_gpu_blocks": 800, "max_num_seqs": 32}, "workload": {"num_requests": 50}}


@pytest.fixture
def client():
    with app_client() as client:
        yield client


def post(client, command: str, scenario: dict | None = FORM):
    return client.post("/api/scenarios/vllm-command", json={"command": command, "scenario": scenario})


def test_the_lines_model_and_flags_are_written_over_the_forms_settings(client):
    response = post(client, "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 128 --block-size 32 --port 8001")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["scenario"]["model"] == "llama-3.1-8b"  # the preset the form's picker names
    assert body["scenario"]["engine"]["max_num_seqs"] == 128 and body["scenario"]["engine"]["block_size"] == 32
    assert body["scenario"]["workload"]["num_requests"] == 50  # the form's own, kept
    assert body["ignored"] == ["--port 8001"]


@pytest.mark.parametrize("command,field", [
    ("vllm serve --block-size 7", "block_size"),
    ("vllm serve --max-num-seqs x", "--max-num-seqs"),
    ("python train.py", "vllm"),
])
def test_a_bad_line_is_422_naming_what_is_wrong(client, command, field):
    response = post(client, command)
    assert response.status_code == 422, response.text
    assert any(loc[-1] == field for loc in (d["loc"] for d in response.json()["detail"]))


def test_an_overlong_line_is_refused_before_it_is_read(client):
    assert post(client, "vllm serve " + "x" * 5000).status_code == 422


@pytest.mark.parametrize("model", ["/etc/passwd", "scheduler_core/data/models", "../config.json"])
def test_a_model_path_is_refused_and_no_file_is_read(client, model, monkeypatch):
    """The web never names a file on the server: a path where the line's model goes is a 422 under
    `command`, before anything looks at the file system."""
    import scheduler_core.timing.presets as presets

    def no_files(*_):
        raise AssertionError("a web request made the server read a file")
    monkeypatch.setattr(presets, "read_json", no_files)
    response = post(client, f"vllm serve {model} --max-num-seqs 8")
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail[0]["loc"][-1] == "command" and "config.json is for the command line" in detail[0]["msg"]


def test_a_setting_the_web_may_not_give_is_422_naming_it(client):
    response = post(client, "vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager")
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "command", "enforce_eager"]
