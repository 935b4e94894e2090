"""`serve --openai` driven by real clients over a real uvicorn: the `openai` SDK (chat and text,
streaming and not), vLLM's error shapes, the guards, and the dashboard's view of the session."""

import json

import httpx
import openai
import pytest

from app.frames import record_view
from tests.app.openai_server import MODEL, OpenAIServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server():
    with OpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def test_a_chat_completion_answers_with_the_simulations_usage(server, client):
    """Usage counts the prompt's stand-in tokens and the tokens the engine generated for it."""
    response = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Why page the KV cache?"}],
                                              max_completion_tokens=12, extra_body={"ignore_eos": True})
    request = server.request_of(response.id)

    assert response.object == "chat.completion" and response.choices[0].message.role == "assistant"
    assert response.choices[0].finish_reason == "length"
    assert response.usage.prompt_tokens == request.num_prompt_tokens
    assert response.usage.completion_tokens == request.num_output_tokens == 12
    assert response.usage.total_tokens == request.num_prompt_tokens + 12
    assert len(response.choices[0].message.content.split()) == 12


def test_a_streamed_chat_completion_sends_each_step_and_the_usage_then_done(server, client):
    """The role first, then the tokens (one event per step), the finish, the usage event, [DONE]."""
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Stream, please."}],
                                            max_tokens=9, stream=True, stream_options={"include_usage": True},
                                            extra_body={"ignore_eos": True})
    chunks = list(stream)
    request = server.request_of(chunks[0].id)

    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    token_chunks = [c for c in chunks[1:] if c.choices]
    assert sum(len(c.choices[0].delta.content.split()) for c in token_chunks) == 9
    assert [c.choices[0].finish_reason for c in token_chunks][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 9
    assert chunks[-1].usage.prompt_tokens == request.num_prompt_tokens


def test_a_text_completion_streams_and_answers_whole_alike(server, client):
    """The same prompt's stand-in text, streamed or not, is the same length; usage matches the engine."""
    whole = client.completions.create(model=MODEL, prompt="The scheduler", max_tokens=7, extra_body={"ignore_eos": True})
    streamed = list(client.completions.create(model=MODEL, prompt="The scheduler", max_tokens=7, stream=True,
                                              extra_body={"ignore_eos": True}))

    assert whole.object == "text_completion" and whole.usage.completion_tokens == 7
    assert len(whole.choices[0].text.split()) == 7
    assert len("".join(c.choices[0].text for c in streamed).split()) == 7
    assert streamed[-1].choices[0].finish_reason == "length"
    assert server.request_of(whole.id).num_prompt_tokens == whole.usage.prompt_tokens


def test_a_prompt_of_token_ids_counts_them_and_continuous_usage_rides_on_every_event(server, client):
    chunks = list(client.completions.create(model=MODEL, prompt=[11, 12, 13, 14], max_tokens=5, stream=True,
                                            stream_options={"include_usage": True, "continuous_usage_stats": True},
                                            extra_body={"ignore_eos": True}))
    token_chunks = [c for c in chunks if c.choices]

    assert all(c.usage.prompt_tokens == 4 for c in chunks)
    assert [c.usage.completion_tokens for c in token_chunks] == sorted(c.usage.completion_tokens for c in token_chunks)
    assert token_chunks[-1].usage.completion_tokens == 5 == chunks[-1].usage.completion_tokens


def test_without_ignore_eos_a_request_may_stop_at_its_stand_in_eos(server, client):
    """Lengths come from the scenario's output distribution, seeded: a generous max_tokens mostly
    ends in `stop`, and usage still counts the EOS token, as vLLM's does."""
    reasons = []
    for _ in range(4):
        response = client.completions.create(model=MODEL, prompt="tell me", max_tokens=2000)
        request = server.request_of(response.id)
        assert response.usage.completion_tokens == request.num_output_tokens
        reasons.append(response.choices[0].finish_reason)
    assert "stop" in reasons and set(reasons) <= {"stop", "length"}


def test_a_prompt_over_max_model_len_is_vllms_400(server, client):
    max_model_len = server.sim.config.max_model_len
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model=MODEL, prompt=[7] * (max_model_len + 1), max_tokens=4)
    body = error.value.body
    assert error.value.status_code == 400 and body["param"] == "input_tokens" and body["code"] == 400
    assert f"maximum context length is {max_model_len} tokens" in body["message"]


@pytest.mark.parametrize("body, param", [
    ({"prompt": "x", "max_tokens": 10**6}, "max_tokens"),
    ({"prompt": "x", "n": 2}, "n"),
    ({"prompt": "x", "max_tokens": "many"}, "body.max_tokens"),
    ({"prompt": "x", "stream_options": {"include_usage": True}}, "stream_options"),
    ({"max_tokens": 3}, "body.prompt"),
])
def test_a_bad_field_is_a_400_naming_it(server, body, param):
    response = httpx.post(f"{server.url}/v1/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param and response.json()["error"]["type"]


def test_an_unknown_model_is_a_404_as_vllm_answers(server, client):
    with pytest.raises(openai.NotFoundError) as error:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
    assert error.value.body["param"] == "model" and MODEL in error.value.body["message"]


def test_models_health_and_version(server, client):
    assert [m.id for m in client.models.list()] == [MODEL]
    assert httpx.get(f"{server.url}/health").status_code == 200
    assert httpx.get(f"{server.url}/version").json() == {"version": server.served.vllm_version}
    metrics = httpx.get(f"{server.url}/metrics").text
    assert "vllm:num_requests_running" in metrics


def test_gets_never_create_requests(server):
    before = len(server.served.engine.source.requests)
    for path in ("/v1/models", "/health", "/version", "/metrics", "/v1/completions", "/v1/chat/completions"):
        httpx.get(f"{server.url}{path}")
    assert len(server.served.engine.source.requests) == before
    assert httpx.get(f"{server.url}/v1/completions").status_code == 405


def test_another_sites_page_is_refused_and_a_body_over_the_limit_too(server):
    """A browser sends Origin: another site's page gets nothing; a client that sends none is served."""
    foreign = httpx.post(f"{server.url}/v1/completions", json={"prompt": "x", "max_tokens": 1},
                         headers={"Origin": "https://evil.example"})
    own = httpx.post(f"{server.url}/v1/completions", json={"prompt": "x", "max_tokens": 1},
                     headers={"Origin": server.url})
    huge = httpx.post(f"{server.url}/v1/completions", content=b'{"prompt": "' + b"a" * (1 << 20) + b'"}',
                      headers={"content-type": "application/json"})
    rebinding = httpx.post(f"{server.url}/v1/completions", json={"prompt": "x"}, headers={"Host": "evil.example"})

    assert foreign.status_code == 403 and own.status_code == 200
    assert huge.status_code == 413 and rebinding.status_code == 400


def test_the_dashboard_shows_the_served_session_and_its_requests(server, client):
    response = client.completions.create(model=MODEL, prompt="on the projector", max_tokens=3)
    session_id = server.served.engine.live.session.session_id
    request_id = response.id.split("-", 1)[1]

    listed = httpx.get(f"{server.url}/api/sessions").json()
    detail = httpx.get(f"{server.url}/api/sessions/{session_id}/requests/{request_id}").json()

    assert session_id in {s["session_id"] for s in listed}
    assert detail["request"]["output"] == response.usage.completion_tokens and detail["request"]["status"].startswith("finished")
    assert httpx.get(f"{server.url}/s/{session_id}/view").status_code == 200


def test_a_past_steps_why_is_replayed_from_the_served_requests(server, client):
    """The dashboard's "why" of a step replays it in a worker from a checkpoint: with the clients'
    requests, never the scenario's synthetic ones, so it is the step the session took."""
    client.completions.create(model=MODEL, prompt="why " * 50, max_tokens=80, extra_body={"ignore_eos": True})
    server.wait_idle()
    session = server.served.engine.live.session
    answer = httpx.get(f"{server.url}/api/sessions/{session.session_id}/steps/{session.step - 1}/why", timeout=30)

    assert answer.status_code == 200, answer.text
    assert answer.json()["record"] == json.loads(json.dumps(record_view(session.last_record)))


@pytest.mark.parametrize("path, body", [
    ("/v1/completions", b'{"prompt": "x", "max_tokens": NaN}'),
    ("/v1/completions", b'{"prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}"),
    ("/v1/completions", b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("/v1/completions", b"\xff\xfe not utf-8"),
    ("/v1/completions", b'["a list, not an object"]'),
    ("/v1/chat/completions", b'{"messages": [{"role": "wizard", "content": "x"}]}'),
    ("/v1/chat/completions", b'{"messages": []}'),
    ("/v1/completions", b'{"prompt": [-1, 2]}'),
    ("/v1/completions", b'{"prompt": ["a", "b"]}'),
], ids=["nan", "huge-int", "deep", "not-utf8", "not-object", "bad-role", "no-messages", "negative-id", "two-prompts"])
def test_hostile_bodies_are_400s_and_never_echoed(server, path, body):
    response = httpx.post(f"{server.url}{path}", content=body, headers={"content-type": "application/json"})
    assert response.status_code in (400, 413), response.text
    assert response.status_code == 413 or set(response.json()["error"]) == {"message", "type", "param", "code"}
    assert "wizard" not in response.text and "a list, not" not in response.text


def test_a_lone_surrogate_in_a_prompt_is_served_and_counted(server):
    response = httpx.post(f"{server.url}/v1/completions", content=b'{"prompt": "a\\ud800b", "max_tokens": 2}',
                          headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["usage"]["prompt_tokens"] == 3
