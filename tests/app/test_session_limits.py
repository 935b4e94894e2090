"""A session's bound on KV blocks when the pool is sized from GPU memory (num_gpu_blocks unset): the
422 names engine.num_gpu_blocks, says what the memory plan gave and which settings bring it within
the bound, and the utilization it names does."""

import re

from .clients import app_client

# gpt-oss-120b over two H200s at 51% of their memory: past the default bound of 131,072 blocks.
OVER = {"model": "gpt-oss-120b", "gpu": "h200", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.51}


def refusal(response) -> tuple[list[str], str]:
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    return [part for part in error["loc"] if part not in ("body", "scenario")], error["msg"]


def test_a_pool_from_memory_past_the_bound_says_what_the_plan_gave_and_what_to_change():
    with app_client() as client:
        field, message = refusal(client.post("/api/sessions", json={"scenario": OVER}))
    assert field == ["engine", "num_gpu_blocks"]
    assert message.startswith("at most 131,072 per session; num_gpu_blocks was left unset, and the memory plan gives 134,093 ")
    assert "gpt-oss-120b on 2 x h200 at gpu_memory_utilization 0.51" in message
    assert "lower gpu_memory_utilization (at most 0.5 here) or set num_gpu_blocks (at most 131,072)" in message


def test_the_utilization_the_refusal_names_fits_the_bound():
    with app_client() as client:
        _, message = refusal(client.post("/api/scenarios/validate", json={"scenario": OVER}))
        utilization = float(re.search(r"at most ([0-9.]+) here", message).group(1))
        fits = client.post("/api/scenarios/validate", json={"scenario": {**OVER, "gpu_memory_utilization": utilization}})
    assert fits.status_code == 200, fits.text
    assert fits.json()["num_gpu_blocks"] <= 131_072


def test_a_block_count_the_user_gave_is_refused_with_the_count():
    with app_client(max_blocks_per_session=1000) as client:
        field, message = refusal(client.post("/api/sessions", json={"scenario": {"engine": {"num_gpu_blocks": 1001}}}))
    assert (field, message) == (["engine", "num_gpu_blocks"], "at most 1,000 per session, got 1,001")
