"""Usage ledger: a row per request (after flush), 200 concurrent requests over loopback, summaries."""

from __future__ import annotations

import asyncio
import sqlite3

import httpx2
import pytest

from gateway.budgets import utc_day
from gateway.errors import ConfigError
from gateway.testing import (
    asgi_post as post,
    chat,
    provider_entry as provider,
    serve_in_thread,
    StubReply,
    StubUpstream,
)
from gateway.usage import summarize_usage

pytestmark = pytest.mark.anyio


def _rows(path):
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("select * from ledger order by ts")]


async def test_ledger_row_has_every_field(upstreams, make_gateway, tmp_path):
    up = StubUpstream(script=[StubReply(status=500)], default=StubReply(content="x" * 40))
    app = make_gateway({
        "providers": [provider("a", upstreams(up)), {"name": "builtin", "kind": "builtin"}],
        "routes": {"m": ["a", "builtin"]},
        "retry": {"attempts_per_provider": 2, "backoff_initial_s": 0.001, "backoff_max_s": 0.002},
        "prices": {"stub-model": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}},
    })
    await post(app, chat("a password=hunter2 here", temperature=0), {"X-Warden-Run-Id": "run-1"})
    await post(app, chat("a password=hunter2 here", temperature=0), {"X-Warden-Run-Id": "run-1"})
    await post(app, {"model": "m"})
    app.flush()
    rows = _rows(tmp_path / "gateway.sqlite3")
    assert len(rows) == 3
    first, hit, bad = rows
    assert first["key"] == "anonymous" and first["run_id"] == "run-1" and first["model"] == "m"
    assert first["provider"] == "a" and first["upstream_model"] == "stub-model"
    assert first["attempts"] == 2 and first["redactions"] == 1 and first["status"] == 200
    assert first["completion_tokens"] == 10 and first["prompt_tokens"] > 0
    expected = (first["prompt_tokens"] * 3.0 + first["completion_tokens"] * 15.0) / 1e6
    assert first["cost_usd"] == pytest.approx(expected)
    assert first["latency_ms"] > 0 and first["cache_hit"] == 0 and first["day"] == utc_day(first["ts"])
    assert hit["cache_hit"] == 1 and hit["provider"] == "cache" and hit["cost_usd"] == 0
    assert bad["status"] == 400 and "messages" in bad["error"]
    await app.aclose()


async def test_200_concurrent_requests_over_loopback(upstreams, make_gateway, tmp_path):
    up = StubUpstream(service_time_s=0.005)
    app = make_gateway({"providers": [provider("p", upstreams(up))], "routes": {"m": ["p"]}})
    with serve_in_thread(app) as base_url:
        async with httpx2.AsyncClient(base_url=base_url, timeout=60,
                                      limits=httpx2.Limits(max_connections=200)) as client:
            async def one(i):
                r = await client.post("/chat/completions", json=chat(f"request {i}"),
                                      headers={"X-Warden-Run-Id": f"run-{i % 7}"})
                return r.status_code, r.json()["choices"][0]["message"]["content"]

            results = await asyncio.gather(*(one(i) for i in range(200)))
    assert results == [(200, "ok")] * 200
    # leaving serve_in_thread ran the ASGI lifespan shutdown, which flushed the ledger
    rows = _rows(tmp_path / "gateway.sqlite3")
    assert len(rows) == 200 and len({r["request_id"] for r in rows}) == 200
    assert all(r["status"] == 200 and r["provider"] == "p" and r["error"] is None for r in rows)
    assert sorted(m["messages"][0]["content"] for m in up.received) == sorted(f"request {i}" for i in range(200))


async def test_summarize_usage(upstreams, make_gateway, tmp_path):
    from gateway.budgets import generate_key

    alice, alice_hash = generate_key()
    bob, bob_hash = generate_key()
    up = StubUpstream()
    app = make_gateway({
        "providers": [provider("p", upstreams(up))], "routes": {"m": ["p"], "n": ["p"]},
        "keys": [{"name": "alice", "team": "ml", "key_sha256": alice_hash},
                 {"name": "bob", "team": "ops", "key_sha256": bob_hash}],
        "prices": {"stub-model": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 1.0}},
    })
    for key, model in [(alice, "m"), (alice, "m"), (alice, "n"), (bob, "m")]:
        assert (await post(app, chat(model=model), {"Authorization": f"Bearer {key}"})).status_code == 200
    await post(app, chat(), {"Authorization": "Bearer wrong"})
    await app.aclose()
    store = tmp_path / "gateway.sqlite3"
    rows = summarize_usage(store)
    by_group = {(r.key, r.team, r.model): r for r in rows}
    assert by_group[("alice", "ml", "m")].requests == 2
    assert by_group[("alice", "ml", "n")].requests == 1
    assert by_group[("bob", "ops", "m")].requests == 1
    assert by_group[("unknown", None, "m")].errors == 1
    assert all(r.day == utc_day(0) or len(r.day) == 10 for r in rows)
    teams = {r.team: r for r in summarize_usage(store, by=("team",))}
    assert teams["ml"].requests == 3 and teams["ml"].total_tokens > 0 and teams["ml"].cost_usd > 0
    assert teams["ml"].key is None
    (total,) = summarize_usage(store, by=())
    assert total.requests == 5 and total.errors == 1
    with pytest.raises(ConfigError):
        summarize_usage(store, by=("key; drop table ledger",))


async def test_every_failure_kind_records_the_provider_tried_and_the_attempts(upstreams, make_gateway, tmp_path):
    slow = StubUpstream(default=StubReply(content="late", delay_s=2.0))
    broken = StubUpstream(default=StubReply(status=503))
    garbage = StubUpstream(default=StubReply(content=None, tool_calls=["not an object"]))
    app = make_gateway({
        "providers": [provider("slow", upstreams(slow)), provider("broken", upstreams(broken)),
                      provider("garbage", upstreams(garbage))],
        "routes": {"slow": ["slow"], "broken": ["broken"], "garbage": ["garbage"]},
        "retry": {"attempts_per_provider": 2, "backoff_initial_s": 0.001, "backoff_max_s": 0.002},
        "run_token_cap": 50,
    })
    deadline = await post(app, chat("hi", model="slow"), {"X-Warden-Deadline-S": "0.3"})
    five_xx = await post(app, chat("hi", model="broken"))
    invalid = await post(app, chat("hi", model="garbage"))
    budget = await post(app, chat("hi " * 400, model="broken"), {"X-Warden-Run-Id": "r1"})
    assert [r.status_code for r in (deadline, five_xx, invalid, budget)] == [504, 502, 502, 429]
    app.flush()
    rows = {r["model"] + ("-budget" if r["status"] == 429 else ""): r for r in _rows(tmp_path / "gateway.sqlite3")}
    # the deadline cancelled the first attempt in flight: that attempt and its provider are on the row
    assert (rows["slow"]["provider"], rows["slow"]["attempts"]) == ("slow", 1)
    assert "deadline_exceeded" in rows["slow"]["error"]
    assert (rows["broken"]["provider"], rows["broken"]["attempts"]) == ("broken", 2)
    assert (rows["garbage"]["provider"], rows["garbage"]["attempts"]) == ("garbage", 2)
    # refused by the run's budget before any provider was tried: no provider, no attempt, said so
    assert (rows["broken-budget"]["provider"], rows["broken-budget"]["attempts"]) == (None, 0)
    assert "run_token_cap" in rows["broken-budget"]["error"]
    await app.aclose()
