"""Redaction: secrets never reach an external provider; the built-in one sees the original."""

from __future__ import annotations

import json

import pytest

from gateway.config import RedactionPattern
from gateway.redaction import Redactor
from gateway.testing import asgi_post as post, chat, provider_entry as provider, StubUpstream

pytestmark = pytest.mark.anyio

SECRETS = {
    "password": "db password=hunter2-Secret!",
    "bearer_token": "curl -H 'Authorization: Bearer eyZZ0123456789abcdefXYZ'",
    "openai_key": "OPENAI_KEY is sk-proj-AbCdEf0123456789GhIjKlMn",
    "aws_access_key": "aws id AKIAIOSFODNN7EXAMPLE used",
    "github_token": "token ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "slack_token": "xoxb-123456789012-abcdefABCDEF",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "email": "page alice.smith@example.org now",
    "secret_assignment": "export SLURM_JWT_SECRET=abcdef123456",
}
LEAKS = ["hunter2", "eyZZ0123456789", "AbCdEf0123456789", "AKIAIOSFODNN7EXAMPLE", "ghp_0123456789",
         "xoxb-123456789012", "MIIEowIBAAKCAQEA", "alice.smith@example.org", "abcdef123456"]


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_redacted(kind):
    text, kinds = Redactor().redact_text(SECRETS[kind])
    assert kind in kinds or (kind == "bearer_token" and kinds), (text, kinds)
    assert "[REDACTED:" in text
    assert not any(leak in text for leak in LEAKS), text


def test_clean_cluster_text_is_untouched():
    text = "gpu017: Xid 79, GPU has fallen off the bus. NCCL WARN timeout; job 4242 key=value tokens/s 1200"
    assert Redactor().redact_text(text) == (text, [])


def test_extra_patterns_and_tool_call_arguments_stay_valid_json():
    r = Redactor([RedactionPattern(name="hostname", pattern=r"\bcn\d{4}\.corp\b")])
    request = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "login cn0042.corp"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "ssh", "arguments": json.dumps({"host": "cn0042.corp", "password": "pa55word"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]}
    out, kinds = r.redact_request(request)
    assert out["messages"][0]["content"][0]["text"] == "login [REDACTED:hostname]"
    args = json.loads(out["messages"][1]["tool_calls"][0]["function"]["arguments"])
    assert args == {"host": "[REDACTED:hostname]", "password": "[REDACTED:secret_field]"}
    assert out["messages"][2] is request["messages"][2], "untouched messages are shared, not copied"
    assert "pa55word" in request["messages"][1]["tool_calls"][0]["function"]["arguments"], "input not modified"
    assert sorted(kinds) == ["hostname", "hostname", "secret_field"]


async def test_secret_never_reaches_external_provider(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway({"providers": [provider("ext", upstreams(up))], "routes": {"m": ["ext"]}})
    text = "\n".join(SECRETS.values())
    body = chat(text)
    body["messages"].append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": json.dumps({"note": text})}}]})
    body["messages"].append({"role": "tool", "tool_call_id": "c1", "content": text})
    assert (await post(app, body)).status_code == 200
    sent = json.dumps(up.received[0])
    assert not [leak for leak in LEAKS if leak in sent]
    assert sent.count("[REDACTED:") >= 3 * len(SECRETS)
    assert 'warden_gateway_redactions_total{kind="email"} 3.0' in app.metrics.render().decode()
    await app.aclose()


async def test_streamed_request_is_redacted_too(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway({"providers": [provider("ext", upstreams(up))], "routes": {"m": ["ext"]}})
    assert (await post(app, chat(SECRETS["password"], stream=True))).status_code == 200
    assert "hunter2" not in json.dumps(up.received[0])
    await app.aclose()


async def test_builtin_provider_sees_the_original(make_gateway):
    seen = []

    def respond(request):
        seen.append(request["messages"][0]["content"])
        return {"role": "assistant", "content": "ok"}

    app = make_gateway({"routes": {"m": ["builtin"]}}, respond=respond)
    assert (await post(app, chat(SECRETS["password"]))).status_code == 200
    assert seen == [SECRETS["password"]]
    await app.aclose()


async def test_redaction_can_be_disabled(upstreams, make_gateway):
    up = StubUpstream()
    app = make_gateway({"providers": [provider("ext", upstreams(up))], "routes": {"m": ["ext"]},
                        "redaction": {"enabled": False}})
    await post(app, chat(SECRETS["password"]))
    assert "hunter2" in json.dumps(up.received[0])
    await app.aclose()
