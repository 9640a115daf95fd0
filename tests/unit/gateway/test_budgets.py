"""Virtual keys, budgets, rate limits and the per-run cap: 429 with a body naming the limit."""

from __future__ import annotations

import pytest

from gateway.budgets import generate_key, hash_key
from gateway.testing import asgi_post as post, chat, provider_entry as provider, StubReply, StubUpstream

pytestmark = pytest.mark.anyio

ALICE, ALICE_HASH = generate_key()
BOB, BOB_HASH = generate_key()


def _config(url, *, keys=(), teams=(), **extra):
    return {"providers": [provider("p", url)], "routes": {"m": ["p"]},
            "prices": {"stub-model": {"input_usd_per_mtok": 1000.0, "output_usd_per_mtok": 1000.0}},
            "keys": list(keys), "teams": list(teams), **extra}


def _auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_keys_are_stored_hashed():
    assert ALICE.startswith("sk-warden-") and ALICE_HASH == hash_key(ALICE) and ALICE not in ALICE_HASH


async def test_missing_or_unknown_key_is_401(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up), keys=[{"name": "alice", "key_sha256": ALICE_HASH}]))
    assert (await post(app, chat())).status_code == 401
    r = await post(app, chat(), _auth("sk-warden-wrong"))
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert (await post(app, chat(), _auth(ALICE))).status_code == 200
    assert len(up.received) == 1
    await app.aclose()


async def test_key_rpm_limit(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up), keys=[{"name": "alice", "key_sha256": ALICE_HASH, "rpm": 2},
                                                    {"name": "bob", "key_sha256": BOB_HASH}]))
    for _ in range(2):
        assert (await post(app, chat(), _auth(ALICE))).status_code == 200
    r = await post(app, chat(), _auth(ALICE))
    assert r.status_code == 429
    err = r.json()["error"]
    assert err["code"] == "rate_limit_exceeded" and err["param"] == "key_rpm"
    assert err["limit"] == {"name": "key_rpm", "scope": "key:alice", "used": 2, "limit": 2}
    assert "key_rpm for key:alice" in err["message"]
    assert int(r.headers["retry-after"]) >= 1
    assert (await post(app, chat(), _auth(BOB))).status_code == 200, "other keys are unaffected"
    assert len(up.received) == 3
    await app.aclose()


async def test_team_tokens_per_day_shared_by_keys(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="x" * 400))  # ~100 completion tokens
    app = make_gateway(_config(
        upstreams(up),
        keys=[{"name": "alice", "team": "ml", "key_sha256": ALICE_HASH},
              {"name": "bob", "team": "ml", "key_sha256": BOB_HASH}],
        teams=[{"name": "ml", "tokens_per_day": 150}],
    ))
    assert (await post(app, chat(), _auth(ALICE))).status_code == 200
    assert (await post(app, chat(), _auth(BOB))).status_code == 200
    r = await post(app, chat(), _auth(ALICE))
    assert r.status_code == 429
    err = r.json()["error"]
    assert err["code"] == "budget_exceeded" and err["param"] == "team_tokens_per_day"
    assert err["limit"]["scope"] == "team:ml" and err["limit"]["used"] >= 150
    await app.aclose()


async def test_key_cost_per_day_and_tpm(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="y" * 40))
    app = make_gateway(_config(upstreams(up), keys=[
        {"name": "alice", "key_sha256": ALICE_HASH, "cost_per_day_usd": 0.02},
        {"name": "bob", "key_sha256": BOB_HASH, "tpm": 5},
    ]))
    assert (await post(app, chat(), _auth(ALICE))).status_code == 200  # ~12 tokens at $1000/Mtok = $0.012
    assert (await post(app, chat(), _auth(ALICE))).status_code == 200  # capped to the $0.008 left
    r = await post(app, chat(), _auth(ALICE))
    assert r.status_code == 429 and r.json()["error"]["param"] == "key_cost_per_day_usd"
    assert r.json()["error"]["limit"]["used"] == pytest.approx(0.02)
    assert (await post(app, chat(), _auth(BOB))).status_code == 200
    r = await post(app, chat(), _auth(BOB))
    assert r.status_code == 429 and r.json()["error"]["param"] == "key_tpm"
    await app.aclose()


async def test_per_run_cost_cap(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="z" * 40))
    app = make_gateway(_config(upstreams(up), run_cost_cap_usd=0.02))
    run = {"X-Warden-Run-Id": "incident-7"}
    statuses = [(await post(app, chat(f"q{i}"), run)).status_code for i in range(4)]
    assert statuses == [200, 200, 429, 429]  # each call costs ~$0.012
    r = await post(app, chat("q9"), run)
    err = r.json()["error"]
    assert err["param"] == "run_cost_cap_usd" and err["limit"]["scope"] == "run:incident-7"
    assert "run_cost_cap_usd for run:incident-7" in err["message"]
    assert (await post(app, chat("q"), {"X-Warden-Run-Id": "incident-8"})).status_code == 200
    assert len(up.received) == 3
    await app.aclose()


async def test_spend_survives_restart(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="z" * 40))
    url = upstreams(up)
    app = make_gateway(_config(url, run_cost_cap_usd=0.01))
    assert (await post(app, chat(), {"X-Warden-Run-Id": "r1"})).status_code == 200
    await app.aclose()
    again = make_gateway(_config(url, run_cost_cap_usd=0.01))
    assert again.budgets.run_totals("r1")[1] == pytest.approx(0.01)  # the cap, not more
    assert (await post(again, chat(), {"X-Warden-Run-Id": "r1"})).status_code == 429
    await again.aclose()


async def test_openai_client_sees_rate_limit_error(upstreams, make_gateway):
    import openai

    from gateway.client import make_openai_client

    up = StubUpstream()
    app = make_gateway(_config(upstreams(up), keys=[{"name": "alice", "key_sha256": ALICE_HASH, "rpm": 1}]))
    client = make_openai_client(app, api_key=ALICE)
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    with pytest.raises(openai.RateLimitError) as exc:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    assert "key_rpm" in str(exc.value)
    await client.close()
    await app.aclose()
