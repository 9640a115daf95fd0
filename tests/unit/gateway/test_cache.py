"""Exact-match response cache: hits skip the provider; keys cover what changes the answer."""

from __future__ import annotations

import time

import pytest

from gateway.cache import cache_key
from gateway.testing import asgi_post as post, chat, provider_entry as provider, StubReply, StubUpstream

pytestmark = pytest.mark.anyio


def _config(url, **cache):
    return {"providers": [provider("p", url)], "routes": {"m": ["p"]}, "cache": cache}


async def test_cache_hit_skips_the_provider(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="answer"))
    app = make_gateway(_config(upstreams(up)))
    first = await post(app, chat("q", temperature=0))
    second = await post(app, chat("q", temperature=0))
    assert first.headers["x-warden-cache"] == "miss" and second.headers["x-warden-cache"] == "hit"
    assert second.json() == first.json()
    assert len(up.received) == 1
    metrics = app.metrics.render().decode()
    assert 'warden_gateway_cache_total{result="hit"} 1.0' in metrics
    assert 'warden_gateway_cache_total{result="miss"} 1.0' in metrics
    await app.aclose()


async def test_cache_survives_restart_through_sqlite(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="persisted"))
    url = upstreams(up)
    app = make_gateway(_config(url))
    await post(app, chat("q", temperature=0))
    await app.aclose()  # flushes the writer
    again = make_gateway(_config(url))
    r = await post(again, chat("q", temperature=0))
    assert r.headers["x-warden-cache"] == "hit" and len(up.received) == 1
    await again.aclose()


async def test_streamed_request_is_served_from_cache(upstreams, make_gateway):
    up = StubUpstream(default=StubReply(content="cached text"))
    app = make_gateway(_config(upstreams(up)))
    await post(app, chat("q", temperature=0))
    r = await post(app, chat("q", temperature=0, stream=True))
    assert r.headers["x-warden-cache"] == "hit" and len(up.received) == 1
    assert '"content":"cached text"' in r.text and r.text.rstrip().endswith("data: [DONE]")
    await app.aclose()


@pytest.mark.parametrize("temperature", [None, 0.7])
async def test_nondeterministic_requests_are_not_cached(upstreams, make_gateway, temperature):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up)))
    body = chat("q") if temperature is None else chat("q", temperature=temperature)
    for _ in range(2):
        r = await post(app, body)
        assert r.headers["x-warden-cache"] == "skip"
    assert len(up.received) == 2
    await app.aclose()


async def test_nondeterministic_cached_when_asked(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up), cache_nondeterministic=True))
    await post(app, chat("q", temperature=0.9))
    assert (await post(app, chat("q", temperature=0.9))).headers["x-warden-cache"] == "hit"
    assert len(up.received) == 1
    await app.aclose()


async def test_cache_header_force_and_off(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up)))
    await post(app, chat("q", temperature=1), {"X-Warden-Cache": "force"})
    assert (await post(app, chat("q", temperature=1), {"X-Warden-Cache": "force"})).headers["x-warden-cache"] == "hit"
    assert (await post(app, chat("q", temperature=1), {"X-Warden-Cache": "off"})).headers["x-warden-cache"] == "skip"
    assert len(up.received) == 2
    await app.aclose()


async def test_expired_entries_are_not_served(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway(_config(upstreams(up), ttl_s=0.05))
    await post(app, chat("q", temperature=0))
    time.sleep(0.1)
    assert (await post(app, chat("q", temperature=0))).headers["x-warden-cache"] == "miss"
    assert len(up.received) == 2
    await app.aclose()


def test_cache_key_covers_model_messages_tools_and_sampling():
    base = chat("q", temperature=0, tools=[{"type": "function", "function": {"name": "a"}}], tool_choice="auto")
    k = cache_key(base)
    assert cache_key({**base, "stream": True, "user": "x"}) == k, "transport-only fields do not matter"
    assert cache_key(dict(reversed(list(base.items())))) == k, "key order does not matter"
    for change in ({"model": "other"}, {"messages": [{"role": "user", "content": "r"}]},
                   {"tools": [{"type": "function", "function": {"name": "b"}}]}, {"tool_choice": "none"},
                   {"temperature": 0.0001}, {"top_p": 0.5}, {"max_tokens": 5}, {"seed": 1}):
        assert cache_key({**base, **change}) != k, change
