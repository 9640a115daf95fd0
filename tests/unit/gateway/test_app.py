"""The ASGI app's endpoints and error bodies, through httpx's ASGITransport."""

from __future__ import annotations

import importlib

import pytest
from gateway.testing import chat, asgi_get as get, asgi_post as post

from gateway.providers.builtin import BuiltinProvider

pytestmark = pytest.mark.anyio


async def test_builtin_completion_shape(make_gateway):
    app = make_gateway({})
    r = await post(app, chat("why is job 4242 stuck?", model="warden-builtin"))
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["model"] == "warden-builtin" and isinstance(body["created"], int)
    choice = body["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "builtin saw: why is job 4242 stuck?"}
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert r.headers["x-warden-provider"] == "builtin" and r.headers["x-request-id"].startswith("req-")
    await app.aclose()


async def test_builtin_tool_calls_finish_reason(make_gateway):
    call = {"id": "c1", "type": "function", "function": {"name": "get_queue", "arguments": "{}"}}
    app = make_gateway({}, respond=lambda req: {"role": "assistant", "content": None, "tool_calls": [call]})
    choice = (await post(app, chat(model="warden-builtin"))).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["tool_calls"] == [call]
    await app.aclose()


async def test_builtin_bad_respond_is_a_502(make_gateway):
    app = make_gateway({}, respond=lambda req: "not a message")
    r = await post(app, chat(model="warden-builtin"))
    assert r.status_code == 502 and "not an assistant message" in r.json()["error"]["message"]
    await app.aclose()


async def test_builtin_defaults_to_the_diagnostician_module():
    provider = BuiltinProvider()
    try:
        importlib.import_module("gateway.builtin.diagnostician")
    except ModuleNotFoundError:
        with pytest.raises(ModuleNotFoundError, match="gateway.builtin"):
            await provider.complete(chat())
    else:
        assert provider._fn() is importlib.import_module("gateway.builtin.diagnostician").respond


@pytest.mark.parametrize(
    ("raw", "needle"),
    [(b"{not json", "not valid JSON"), (b"[1]", "JSON object"), (b'{"messages": []}', "'model'"),
     (b'{"model": "m", "messages": []}', "'messages'")],
)
async def test_bad_requests_are_400(make_gateway, raw, needle):
    import httpx

    app = make_gateway({})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as client:
        r = await client.post("/v1/chat/completions", content=raw)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and needle in err["message"]
    await app.aclose()


async def test_models_health_metrics_and_404(make_gateway):
    app = make_gateway({})
    await post(app, chat(model="warden-builtin"))
    assert (await get(app, "/v1/models")).json() == {"object": "list", "data": [
        {"id": "warden-builtin", "object": "model", "created": 0, "owned_by": "warden"}]}
    assert (await get(app, "/healthz")).json() == {"status": "ok", "providers": {"builtin": "ok"}}
    metrics = await get(app, "/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'warden_gateway_requests_total{model="warden-builtin",provider="builtin",status="200"} 1.0' in text
    assert 'warden_gateway_request_latency_seconds_count{model="warden-builtin"} 1.0' in text
    assert 'warden_gateway_tokens_total{kind="prompt",model="warden-builtin"}' in text
    r = await get(app, "/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    await app.aclose()


async def test_streamed_builtin_response(make_gateway):
    app = make_gateway({})
    r = await post(app, chat("s", model="warden-builtin", stream=True, stream_options={"include_usage": True}))
    assert r.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in r.text.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]" and '"content":"builtin saw: s"' in events[0]
    assert '"usage"' in events[-2] and '"choices":[]' in events[-2]
    await app.aclose()


def test_uvicorn_config_is_loopback_fast_path_with_lifespan(tmp_path):
    from gateway.config import default_config
    from gateway.serve import uvicorn_config

    cfg = uvicorn_config(default_config(), store_path=tmp_path / "g.sqlite3")
    assert (cfg.host, cfg.port, cfg.lifespan, cfg.access_log) == ("127.0.0.1", 4000, "on", False)
    assert cfg.http == "httptools" and cfg.loop == "uvloop"
    cfg.app.store.close()


async def test_upstream_stream_error_before_first_chunk_falls_back(upstreams, make_gateway):
    from gateway.testing import StubReply, StubUpstream, provider_entry

    bad = StubUpstream(default=StubReply(status=500))
    good = StubUpstream(default=StubReply(content="streamed from second"))
    app = make_gateway({"providers": [provider_entry("a", upstreams(bad)), provider_entry("b", upstreams(good))],
                        "routes": {"m": ["a", "b"]}})
    r = await post(app, chat("s", stream=True))
    assert r.status_code == 200 and r.headers["x-warden-provider"] == "b"
    assert '"content":"streamed from second"' in r.text
    await app.aclose()
