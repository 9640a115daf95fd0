"""Attacks on the gateway (issue 15, items 4, 7, 9 and 10), each reproduced against the real ASGI app and
real loopback upstreams:

* budgets and rate limits hold under concurrency (reserved before the upstream call, settled after);
* a malformed upstream reply is a typed 502, never a 500 or a traceback;
* ``/metrics`` label values stay bounded whatever model names callers send;
* 200 concurrent requests against a healthy upstream, through the gateway under uvicorn, all succeed.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sqlite3

import httpx2
import pytest

from gateway.budgets import generate_key
from gateway.testing import StubReply, StubUpstream, asgi_get, asgi_post, chat, provider_entry, serve_in_thread
from tests.emulators.openai_upstream import Raw

pytestmark = pytest.mark.anyio

KEY, KEY_HASH = generate_key()
AUTH = {"Authorization": f"Bearer {KEY}"}


def _answered_tokens(responses) -> int:
    return sum(r.json()["usage"]["total_tokens"] for r in responses if r.status_code == 200)


async def test_100_concurrent_requests_cannot_overspend_a_daily_token_budget(upstreams, make_gateway):
    # Each answer is ~20 tokens and the upstream takes 50 ms, so every request is in flight at once.
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]},
                        "keys": [{"name": "alice", "key_sha256": KEY_HASH, "tokens_per_day": 100}]})
    responses = await asyncio.gather(*(asgi_post(app, chat("hi", max_tokens=20), AUTH) for _ in range(100)))
    statuses = collections.Counter(r.status_code for r in responses)
    assert _answered_tokens(responses) <= 100, statuses
    assert statuses[200] >= 1 and statuses[429] == 100 - statuses[200]
    refused = next(r for r in responses if r.status_code == 429).json()["error"]
    assert refused["param"] == "key_tokens_per_day"
    assert len(up.received) == statuses[200], "a refused request never reaches the upstream"
    await app.aclose()


async def test_60_concurrent_requests_cannot_overspend_a_daily_cost_budget(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]},
                        "prices": {"stub-model": {"input_usd_per_mtok": 2000.0, "output_usd_per_mtok": 2000.0}},
                        "keys": [{"name": "alice", "key_sha256": KEY_HASH, "cost_per_day_usd": 0.001}]})
    responses = await asyncio.gather(*(asgi_post(app, chat("hi", max_tokens=20), AUTH) for _ in range(60)))
    spent = _answered_tokens(responses) * 2000.0 / 1e6
    assert spent <= 0.001 + 1e-12, (spent, collections.Counter(r.status_code for r in responses))
    await app.aclose()


async def test_a_request_without_max_tokens_is_capped_to_what_the_budget_has_left(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]},
                        "keys": [{"name": "alice", "key_sha256": KEY_HASH, "tokens_per_day": 300}]})
    assert (await asgi_post(app, chat("hi"), AUTH)).status_code == 200
    sent = up.received[0]
    assert 0 < sent["max_tokens"] <= 300, "the upstream was told how far it may go"
    await app.aclose()


async def test_concurrent_runs_cannot_overspend_a_run_cap_across_gateway_instances(upstreams, make_gateway):
    """Two apps on one ledger (two `warden` processes): the run cap is held in the shared store."""
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)
    config = {"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]}, "run_token_cap": 100}
    a, b = make_gateway(config), make_gateway(config)
    run = {"X-Warden-Run-Id": "r-1"}
    responses = await asyncio.gather(*(asgi_post(app, chat("hi", max_tokens=20), run) for app in (a, b) * 30))
    assert _answered_tokens(responses) <= 100
    assert collections.Counter(r.status_code for r in responses)[429] > 0
    await a.aclose()
    await b.aclose()


async def test_token_rate_limit_holds_under_concurrency(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]},
                        "keys": [{"name": "alice", "key_sha256": KEY_HASH, "tpm": 100, "rpm": 50}]})
    responses = await asyncio.gather(*(asgi_post(app, chat("hi", max_tokens=20), AUTH) for _ in range(80)))
    assert _answered_tokens(responses) <= 100
    assert {r.json()["error"]["param"] for r in responses if r.status_code == 429} <= {"key_tpm", "key_rpm"}
    await app.aclose()


async def test_settled_reservations_free_the_budget_for_later_requests(upstreams, make_gateway, tmp_path):
    up = StubUpstream(default=StubReply(content="x" * 8))  # ~2 completion tokens
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]},
                        "keys": [{"name": "alice", "key_sha256": KEY_HASH, "tokens_per_day": 100}]})
    # Reserving 40 per request, three could not run at once; settled at ~3 tokens each, ten run one by one.
    for _ in range(10):
        assert (await asgi_post(app, chat("hi", max_tokens=40), AUTH)).status_code == 200
    await app.aclose()


# --- item 7: malformed upstream replies are a typed 502 ---

GARBAGE = {
    "not_json": b"<html>502 Bad Gateway</html>",
    "json_list": b"[1, 2, 3]",
    "empty_choices": json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode(),
    "choice_not_object": json.dumps({"choices": ["hello"]}).encode(),
    "no_message": json.dumps({"choices": [{"index": 0, "finish_reason": "stop"}]}).encode(),
    "bad_usage": json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                             "usage": {"prompt_tokens": "many", "completion_tokens": None}}).encode(),
    "tool_call_not_object": json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                              "tool_calls": ["get_jobs"]}}]}).encode(),
    "huge_number": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}], "usage": '
                   b'{"prompt_tokens": 1e999}}',
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
async def test_malformed_upstream_reply_is_a_typed_502(case, upstreams, make_gateway):
    app = make_gateway({"providers": [provider_entry("p", upstreams(Raw(GARBAGE[case])))],
                        "routes": {"m": ["p"]}})
    r = await asgi_post(app, chat())
    assert r.status_code == 502, r.text
    err = r.json()["error"]
    assert err["code"] == "all_providers_failed" and "p:" in err["message"]
    await app.aclose()


@pytest.mark.parametrize("body", [b"data: {not json}\n\n", b"data: [1]\n\n", b'data: {"choices": [7]}\n\n'])
async def test_malformed_stream_chunks_end_the_stream_with_a_typed_error(body, upstreams, make_gateway):
    up = Raw(body, content_type=b"text/event-stream")
    app = make_gateway({"providers": [provider_entry("p", upstreams(up))], "routes": {"m": ["p"]}})
    r = await asgi_post(app, chat(stream=True))
    assert r.status_code == 502 or ('"provider_bad_response"' in r.text and r.text.endswith("data: [DONE]\n\n")), r.text
    await app.aclose()


# --- item 9: /metrics label values are bounded ---

async def test_unknown_model_names_do_not_become_metric_series(make_gateway):
    app = make_gateway({})
    for i in range(50):
        assert (await asgi_post(app, chat(model=f"attacker-{i}-" + "x" * 100))).status_code == 404
    text = (await asgi_get(app, "/metrics")).text
    assert "attacker-" not in text
    assert 'model="unknown"' in text
    await app.aclose()


# --- item 10: 200 concurrent requests through the served gateway ---

async def test_200_concurrent_requests_through_uvicorn_all_succeed(tmp_path):
    from gateway.config import GatewayConfig
    from gateway.serve import uvicorn_config
    import threading
    import time
    import uvicorn

    up = StubUpstream(service_time_s=0.01)
    with serve_in_thread(up) as url:
        cfg = GatewayConfig.model_validate({"providers": [provider_entry("p", url)], "routes": {"m": ["p"]}})
        server = uvicorn.Server(uvicorn_config(cfg, "127.0.0.1", 0, store_path=tmp_path / "g.db"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        statuses: collections.Counter = collections.Counter()
        try:
            for _wave in range(3):  # fresh client connections every wave
                async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}/v1", timeout=60,
                                              limits=httpx2.Limits(max_connections=400)) as client:
                    rs = await asyncio.gather(*(client.post("/chat/completions", json=chat(f"r{i}", model="m"))
                                                for i in range(200)))
                statuses.update(r.status_code for r in rs)
        finally:
            server.should_exit = True
            thread.join(timeout=10)
    assert statuses == {200: 600}
    with sqlite3.connect(tmp_path / "g.db") as conn:
        assert conn.execute("select count(*) from ledger where status = 200").fetchone()[0] == 600
