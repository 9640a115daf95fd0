"""The plain openai client and a pydantic-ai agent (OpenAIChatModel) through the gateway, streamed and not."""

from __future__ import annotations

import json
import sqlite3

import pytest
from pydantic_ai import Agent

from gateway.client import GATEWAY_URL_ENV, make_model, make_openai_client
from gateway.testing import provider_entry as provider, serve_in_thread, StubReply, StubUpstream

pytestmark = pytest.mark.anyio


def _tool_then_answer(request):
    """Upstream that asks for get_node_state until it sees the tool's answer, then concludes."""
    results = [m for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        assert request["tools"][0]["function"]["name"] == "get_node_state"
        return StubReply(tool_calls=[{"id": "call_1", "type": "function", "function": {
            "name": "get_node_state", "arguments": json.dumps({"node": "gpu017"})}}])
    return StubReply(content=f"diagnosis: {results[0]['content']}")


def _agent(model):
    agent = Agent(model, instructions="Diagnose the cluster.")

    @agent.tool_plain
    def get_node_state(node: str) -> str:
        """State of a Slurm node."""
        return f"{node} is DRAINED (Xid 79)"

    return agent


@pytest.fixture
def gateway(upstreams, make_gateway):
    up = StubUpstream(responder=_tool_then_answer)
    app = make_gateway({"providers": [provider("vllm", upstreams(up))], "routes": {"diag": ["vllm"]}})
    return app, up


async def test_openai_client_plain_and_streamed(gateway):
    app, up = gateway
    up.responder = None
    up.default = StubReply(content="hello from upstream")
    client = make_openai_client(app, run_id="run-9")
    r = await client.chat.completions.create(model="diag", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "hello from upstream" and r.usage.total_tokens > 0
    stream = await client.chat.completions.create(
        model="diag", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True})
    pieces, usage = [], None
    async for chunk in stream:
        pieces.extend(c.delta.content or "" for c in chunk.choices)
        usage = chunk.usage or usage
    assert "".join(pieces) == "hello from upstream" and usage.total_tokens > 0
    models = await client.models.list()
    assert [m.id for m in models.data] == ["diag"]
    await client.close()
    app.flush()
    rows = app.store.reader.execute("select run_id, stream from ledger").fetchall()
    assert rows == [("run-9", 0), ("run-9", 1)]
    await app.aclose()


async def test_pydantic_ai_agent_in_process(gateway):
    app, up = gateway
    result = await _agent(make_model("diag", app)).run("Why is job 4242 stuck?")
    assert result.output == "diagnosis: gpu017 is DRAINED (Xid 79)"
    assert len(up.received) == 2 and up.received[1]["messages"][-1]["role"] == "tool"
    assert up.received[0]["stream"] is False
    await app.aclose()


async def test_pydantic_ai_agent_streamed_in_process(gateway):
    app, up = gateway
    async with _agent(make_model("diag", app)).run_stream("Why is job 4242 stuck?") as result:
        output = await result.get_output()
    assert output == "diagnosis: gpu017 is DRAINED (Xid 79)"
    assert [r["stream"] for r in up.received] == [True, True]
    await app.aclose()


async def test_pydantic_ai_agent_over_loopback_via_env(gateway, monkeypatch):
    app, up = gateway
    with serve_in_thread(app) as base_url:
        monkeypatch.setenv(GATEWAY_URL_ENV, base_url)
        model = make_model("diag", run_id="run-env")
        assert str(model.client.base_url).rstrip("/") == base_url
        agent = _agent(model)
        plain = await agent.run("Why is job 4242 stuck?")
        async with agent.run_stream("Why is job 4242 stuck?") as streamed:
            streamed_output = await streamed.get_output()
        await model.client.close()
    assert plain.output == streamed_output == "diagnosis: gpu017 is DRAINED (Xid 79)"
    assert len(up.received) == 4
    assert not [h for h in up.headers if "x-warden-run-id" in h], "the run id stays in the gateway"
    with sqlite3.connect(app.store.path) as conn:  # the lifespan shutdown flushed the ledger
        assert {r[0] for r in conn.execute("select run_id from ledger")} == {"run-env"}


async def test_openai_client_over_loopback(gateway):
    import openai

    app, up = gateway
    up.responder = None
    with serve_in_thread(app) as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        r = await client.chat.completions.create(model="diag", messages=[{"role": "user", "content": "x"}])
        assert r.choices[0].message.content == "ok"
        with pytest.raises(openai.NotFoundError):
            await client.chat.completions.create(model="missing", messages=[{"role": "user", "content": "x"}])
        await client.close()


async def test_builtin_provider_through_agent(make_gateway):
    calls = []

    def respond(request):
        calls.append(request)
        if not any(m["role"] == "tool" for m in request["messages"]):
            return {"role": "assistant", "content": None, "tool_calls": [{"id": "b1", "type": "function",
                    "function": {"name": "get_node_state", "arguments": "{\"node\": \"gpu017\"}"}}]}
        return {"role": "assistant", "content": "builtin: " + request["messages"][-1]["content"]}

    app = make_gateway({}, respond=respond)
    agent = _agent(make_model("warden-builtin", app))
    assert (await agent.run("why?")).output == "builtin: gpu017 is DRAINED (Xid 79)"
    async with agent.run_stream("why?") as result:
        assert await result.get_output() == "builtin: gpu017 is DRAINED (Xid 79)"
    assert len(calls) == 4 and calls[0]["tools"][0]["function"]["name"] == "get_node_state"
    await app.aclose()


def test_make_model_needs_a_target(monkeypatch):
    monkeypatch.delenv(GATEWAY_URL_ENV, raising=False)
    with pytest.raises(ValueError, match=GATEWAY_URL_ENV):
        make_model("x")
