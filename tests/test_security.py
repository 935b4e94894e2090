"""What a stranger's request, or a hostile page in the lecturer's browser, must never get:
a file on the server, a session it did not make, or a server that stops answering."""

import os

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture
def client():
    with TestClient(create_app(Settings(heartbeat_s=0.2))) as client:
        yield client


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("TOP-SECRET-FIRST-LINE,1,2\n")
    return path


@pytest.mark.parametrize("field", ["trace", "model", "gpu"])
def test_compare_set_b_cannot_name_a_file(client, secret_file, field):
    response = client.get("/compare", params={"scenario": "default", "set_b": f"{field}={secret_file}"})
    assert response.status_code == 422
    assert "TOP-SECRET" not in response.text
    assert str(secret_file) not in response.text  # not even echoed back as a value
    assert client.get("/api/sessions").json() == []


def test_compare_set_b_trace_at_a_fifo_is_refused_without_opening_it(client, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Opening a FIFO with no writer blocks forever: answering at all proves it was never opened.
    response = client.get("/compare", params={"scenario": "default", "set_b": f"trace={fifo}"})
    assert response.status_code == 422


def test_compare_set_b_still_changes_allowed_fields(client):
    response = client.get("/compare", params={"scenario": "default", "set_b": "max_num_seqs=8"})
    assert response.status_code == 200
    scenarios = [session["scenario"] for session in client.get("/api/sessions").json()]
    assert sorted(s["engine"]["max_num_seqs"] for s in scenarios) == [8, 64]
