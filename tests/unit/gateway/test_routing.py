"""Fallback, retries and cool-down, against real loopback upstreams."""

from __future__ import annotations

import pytest

from gateway.testing import asgi_post as post, chat, provider_entry as provider, StubReply, StubUpstream

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("failure", "provider_kw", "code"),
    [
        (StubReply(status=500), {}, "provider_server_error"),
        (StubReply(status=503), {}, "provider_server_error"),
        (StubReply(status=429), {}, "provider_rate_limited"),
        (StubReply(delay_s=1.0), {"openai_timeout_s": 0.2}, "provider_timeout"),
    ],
    ids=["500", "503", "429", "timeout"],
)
async def test_fails_over_to_second_provider(upstreams, make_gateway, failure, provider_kw, code):
    first = StubUpstream(default=failure)
    second = StubUpstream(default=StubReply(content="from second"))
    app = make_gateway({
        "providers": [provider("first", upstreams(first), **provider_kw), provider("second", upstreams(second))],
        "routes": {"m": ["first", "second"]},
    })
    r = await post(app, chat("hi"))
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "from second"
    assert r.headers["x-warden-provider"] == "second"
    assert len(first.received) == 1 and len(second.received) == 1
    metrics = app.metrics.render().decode()
    assert f'warden_gateway_provider_failures_total{{code="{code}",provider="first"}} 1.0' in metrics
    assert 'warden_gateway_fallbacks_total{model="m"} 1.0' in metrics
    await app.aclose()


async def test_connection_refused_fails_over(upstreams, make_gateway):
    second = StubUpstream(default=StubReply(content="alive"))
    app = make_gateway({
        "providers": [provider("dead", "http://127.0.0.1:9/v1"), provider("second", upstreams(second))],
        "routes": {"m": ["dead", "second"]},
    })
    r = await post(app, chat())
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "alive"
    await app.aclose()


async def test_retries_same_provider_before_falling_back(upstreams, make_gateway):
    flaky = StubUpstream(script=[StubReply(status=502), StubReply(status=429)], default=StubReply(content="third try"))
    other = StubUpstream()
    app = make_gateway({
        "providers": [provider("flaky", upstreams(flaky)), provider("other", upstreams(other))],
        "routes": {"m": ["flaky", "other"]},
        "retry": {"attempts_per_provider": 3, "backoff_initial_s": 0.001, "backoff_max_s": 0.01},
        "cooldown": {"failures": 10},
    })
    r = await post(app, chat())
    assert r.json()["choices"][0]["message"]["content"] == "third try"
    assert len(flaky.received) == 3 and other.received == []
    await app.aclose()


async def test_all_failing_gives_502_naming_each_attempt(upstreams, make_gateway):
    a = StubUpstream(default=StubReply(status=500))
    b = StubUpstream(default=StubReply(status=503))
    app = make_gateway({"providers": [provider("a", upstreams(a)), provider("b", upstreams(b))],
                        "routes": {"m": ["a", "b"]}})
    r = await post(app, chat())
    assert r.status_code == 502
    err = r.json()["error"]
    assert err["code"] == "all_providers_failed"
    assert "a: upstream answered HTTP 500" in err["message"] and "b: upstream answered HTTP 503" in err["message"]
    await app.aclose()


async def test_a_chain_that_only_timed_out_is_a_504_naming_the_timeout(upstreams, make_gateway):
    # a slow model is not a broken one: the caller stops with `timeout`, told which setting cut it
    slow = StubUpstream(default=StubReply(delay_s=1.0))
    other = StubUpstream(default=StubReply(status=500))
    app = make_gateway({"providers": [provider("slow", upstreams(slow), openai_timeout_s=0.2)],
                        "routes": {"m": ["slow"]},
                        "retry": {"attempts_per_provider": 1}})
    r = await post(app, chat())
    assert r.status_code == 504, r.text
    err = r.json()["error"]
    assert err["code"] == "upstream_timeout" and "no answer within openai_timeout_s = 0.2 s" in err["message"]
    await app.aclose()
    app = make_gateway({"providers": [provider("slow", upstreams(slow), openai_timeout_s=0.2),
                                      provider("other", upstreams(other))],
                        "routes": {"m": ["slow", "other"]}, "retry": {"attempts_per_provider": 1}})
    r = await post(app, chat())
    assert r.status_code == 502 and r.json()["error"]["code"] == "all_providers_failed", "one broken: 502"
    await app.aclose()


async def test_bad_request_upstream_is_not_retried_elsewhere(upstreams, make_gateway):
    a = StubUpstream(default=StubReply(status=400))
    b = StubUpstream()
    app = make_gateway({"providers": [provider("a", upstreams(a)), provider("b", upstreams(b))],
                        "routes": {"m": ["a", "b"]}})
    r = await post(app, chat())
    assert r.status_code == 400 and b.received == []
    await app.aclose()


async def test_failing_provider_is_cooled_down_and_skipped(upstreams, make_gateway):
    bad = StubUpstream(default=StubReply(status=500))
    good = StubUpstream(default=StubReply(content="good"))
    app = make_gateway({
        "providers": [provider("bad", upstreams(bad)), provider("good", upstreams(good))],
        "routes": {"m": ["bad", "good"]},
        "cooldown": {"failures": 2, "window_s": 60, "cooldown_s": 60},
    })
    for _ in range(5):
        r = await post(app, chat())
        assert r.json()["choices"][0]["message"]["content"] == "good"
    assert len(bad.received) == 2, "after 2 failures the provider is skipped"
    assert app.router.is_cooled_down("bad")
    health = (await _health(app))["providers"]
    assert health == {"bad": "cooled_down", "good": "ok"}
    await app.aclose()


async def test_cooled_down_provider_is_used_when_nothing_else_is_left(upstreams, make_gateway):
    only = StubUpstream(script=[StubReply(status=500)], default=StubReply(content="back"))
    app = make_gateway({"providers": [provider("only", upstreams(only))], "routes": {"m": ["only"]},
                        "cooldown": {"failures": 1, "cooldown_s": 60}})
    assert (await post(app, chat())).status_code == 502
    assert app.router.is_cooled_down("only")
    r = await post(app, chat())
    assert r.status_code == 200 and not app.router.is_cooled_down("only")
    await app.aclose()


async def test_unknown_model_is_404(make_gateway):
    app = make_gateway({})
    r = await post(app, chat(model="nope"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    await app.aclose()


async def test_upstream_model_name_is_substituted(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway({"providers": [provider("p", upstreams(up), openai_model="qwen2.5-7b")],
                        "routes": {"m": ["p"]}})
    await post(app, chat())
    assert up.received[0]["model"] == "qwen2.5-7b"
    await app.aclose()


async def _health(app):
    from gateway.testing import asgi_get as get

    return (await get(app, "/healthz")).json()
