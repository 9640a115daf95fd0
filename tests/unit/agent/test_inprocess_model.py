"""gateway.inprocess.InProcessModel against pydantic-ai's OpenAIChatModel over the OpenAI SDK: the same
agent runs send the gateway the same requests and end in the same Diagnosis, on bundled incidents,
on a refused answer, on a forced last answer and on a budget refusal. Both reach a real gateway app
with the real built-in diagnostician; the app is wrapped only to record what reaches it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.diagnose import run_agent
from agent.gateway_setup import builtin_only
from agent.limits import LoopLimits
from gateway.app import create_app
from gateway.builtin.diagnostician import respond as diagnostician
from gateway.client import make_model
from gateway.config import BUILTIN_MODEL, GatewayConfig, default_config
from gateway.inprocess import InProcessModel, _profile
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
INCIDENTS = REPO / "evals" / "incidents"
_HEADERS = (b"authorization", b"x-warden-run-id", b"x-warden-deadline-s", b"x-warden-cache")


class Recorder:
    """The gateway app, recording each request's JSON body and Warden headers."""

    def __init__(self, app: Any) -> None:
        self.app, self.bodies, self.headers = app, [], []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            async def recording_receive():
                message = await receive()
                if message.get("body"):
                    self.bodies.append(json.loads(message["body"]))
                return message
            self.headers.append(sorted(k for k, _ in scope["headers"] if k in _HEADERS))
            return await self.app(scope, recording_receive, send)
        return await self.app(scope, receive, send)


def _run(tmp_path: Path, kind: str, incident: str, *, respond=None, limits=None, config=None):
    config = config or default_config()
    app = create_app(config, store_path=tmp_path / f"{kind}.db", builtin_respond=respond)
    rec = Recorder(app)
    model = (InProcessModel(BUILTIN_MODEL, rec, run_id="run-1") if kind == "inprocess"
             else make_model(BUILTIN_MODEL, rec, run_id="run-1"))
    ctx = ReadContext.from_snapshot(INCIDENTS / incident / "snapshot")
    try:
        out = run_agent(ctx, "What is wrong, and what should be done?", model=BUILTIN_MODEL, model_override=model,
                        gateway_config=config, audit=False, limits=limits or LoopLimits(), run_id="run-1")
    finally:
        import asyncio
        asyncio.run(app.aclose())
    return out.diagnosis, rec


def _same(tmp_path: Path, incident: str, **kwargs: Any) -> tuple[Any, Recorder]:
    d_sdk, sdk = _run(tmp_path, "sdk", incident, **kwargs)
    d_in, inproc = _run(tmp_path, "inprocess", incident, **kwargs)
    assert inproc.bodies == sdk.bodies  # messages, tools (after the schema transform), tool_choice, settings
    assert inproc.headers == sdk.headers
    assert d_in.model_dump(exclude={"run_id"}) == d_sdk.model_dump(exclude={"run_id"})
    return d_in, inproc


def test_the_profile_is_the_openai_providers():
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    for alias in (BUILTIN_MODEL, "gpt-4o-mini", "ft:gpt-4o:acme"):
        assert OpenAIProvider.model_profile(alias) == {k: v for k, v in _profile(alias).items()
                                                      if k != "supports_video_input"}
        sdk = OpenAIChatModel(alias, provider=OpenAIProvider(api_key="k", base_url="http://x.invalid/v1"))
        assert sdk.profile == InProcessModel(alias, Recorder(None)).profile


@pytest.mark.parametrize("incident", ["xid79-nccl-watchdog-other-rank", "healthy-busy-cluster-priority-wait",
                                      "k8s-pytorchjob-nccl-failure-xid79-on-one-node",
                                      "pending-qos-max-gres-per-user"])
def test_same_requests_and_diagnosis_as_the_sdk_path(tmp_path, incident):
    d, rec = _same(tmp_path, incident)
    assert d.root_cause and d.stopped_by is None and len(rec.bodies) == 2
    assert rec.bodies[0]["tool_choice"] == "required" and rec.bodies[1]["messages"][-1]["role"] == "tool"


def test_a_forced_last_answer_is_sent_the_same(tmp_path):
    d, rec = _same(tmp_path, "xid79-nccl-watchdog-other-rank", limits=LoopLimits(model_requests=2))
    assert rec.bodies[-1]["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    assert d.root_cause == "gpu_hardware_fault"


def test_a_refused_answer_and_its_retry_are_sent_the_same(tmp_path):
    def early_answer_first(request: dict[str, Any]) -> dict[str, Any]:
        if len(request["messages"]) == 2:  # answer before reading anything: the output validator refuses it
            args = {"root_cause": "healthy", "culprits": [], "evidence": [], "confidence": 0.5, "summary": "fine"}
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "final_result", "arguments": json.dumps(args)}}]}
        return diagnostician(request)

    d, rec = _same(tmp_path, "xid79-nccl-watchdog-other-rank", respond=early_answer_first)
    refused, retry = rec.bodies[1]["messages"][-2:]
    assert refused["tool_calls"][0]["function"]["name"] == "final_result"
    assert retry["role"] == "tool" and retry["tool_call_id"] == "call_0" and len(rec.bodies) >= 3


def test_a_budget_refusal_stops_the_run_the_same_way(tmp_path):
    cfg = default_config().model_copy(update={"run_token_cap": 10})
    d, _ = _same(tmp_path, "xid79-nccl-watchdog-other-rank", config=cfg)
    assert d.stopped_by and d.stopped_by.startswith("budget:") and "run_token_cap" in d.stopped_by


def test_only_builtin_routes_skip_the_sdk(monkeypatch):
    cfg = GatewayConfig.model_validate({
        "providers": [{"name": "llm", "kind": "openai_compat", "openai_base_url": "http://127.0.0.1:9/v1"},
                      {"name": "builtin", "kind": "builtin"}],
        "routes": {"llm": ["llm"], "llm-or-builtin": ["llm", "builtin"], BUILTIN_MODEL: ["builtin"]}})
    assert builtin_only(cfg, BUILTIN_MODEL) and not builtin_only(cfg, "llm")
    assert not builtin_only(cfg, "llm-or-builtin") and not builtin_only(cfg, "unrouted")
    monkeypatch.setenv("WARDEN_GATEWAY_URL", "http://127.0.0.1:4000/v1")
    assert not builtin_only(cfg, BUILTIN_MODEL)


def test_unsupported_settings_are_named(tmp_path):
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UserError

    app = create_app(default_config(), store_path=tmp_path / "g.db")
    agent = Agent(InProcessModel(BUILTIN_MODEL, app))
    with pytest.raises(UserError, match="openai_logprobs"):
        agent.run_sync("hi", model_settings={"openai_logprobs": True})  # type: ignore[typeddict-unknown-key]
    asyncio.run(app.aclose())
