"""Loop limits: each limit kind ends a real diagnose() run with a partial Diagnosis naming it,
through the real agent loop (FunctionModel or the built-in model over a bundled incident)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import agent.limits as limits_mod
from agent.audit import AuditLog
from agent.diagnose import diagnose
from agent.limits import LimitExceeded, LoopGuard, LoopLimits, normalize_call
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"


@pytest.fixture()
def ctx() -> ReadContext:
    return ReadContext.from_snapshot(INCIDENT)


def looping(calls_per_turn):
    """A model that never answers: each turn returns the tool calls calls_per_turn(turn) gives."""
    turn = [0]

    def fn(messages, info: AgentInfo) -> ModelResponse:
        turn[0] += 1
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{turn[0]}_{i}")
                                    for i, (name, args) in enumerate(calls_per_turn(turn[0]))])
    return FunctionModel(fn)


def run(ctx, model, tmp_path, **limits):
    log = AuditLog(tmp_path / "audit.db")
    d = diagnose(ctx, "why is job 73412 stuck?", model_override=model, limits=LoopLimits(**limits), audit=log)
    return d, log


def test_near_identical_arguments_stop_the_run(ctx, tmp_path):
    variants = [{"job_id": "73412"}, {"job_id": " 73412 ", "limit": 50}, {"job_id": "73412", "user": None},
                {"job_id": "73412", "limit": 20}]
    d, log = run(ctx, looping(lambda t: [("get_jobs", variants[(t - 1) % 4])]), tmp_path)
    assert d.stopped_by and d.stopped_by.startswith("repeated_call:")
    assert d.proposed_actions == []
    # No conclusion was reached: the partial diagnosis is inconclusive, with the checks' findings attached
    # for the reader and their strongest one quoted, never offered as the answer.
    assert d.root_cause == "inconclusive" and d.findings and d.findings[0].root_cause == "gpu_hardware_fault"
    assert "not confirmed" in d.summary
    assert d.answered_by == "checks" and d.culprits == [] and "not the model's" in d.summary
    limits = [r.payload for r in log.records() if r.kind == "limit"]
    assert [p["limit"] for p in limits] == ["repeated_call"]


def test_short_cycle_stops_the_run(ctx, tmp_path):
    cycle = [("get_nodes", {"node": "gpu007"}), ("get_kernel_events", {"node": "gpu007"})]
    d, _ = run(ctx, looping(lambda t: [cycle[(t - 1) % 2]]), tmp_path, max_similar_calls=5)
    assert d.stopped_by and d.stopped_by.startswith("cycle:")
    assert "get_nodes -> get_kernel_events" in d.stopped_by or "get_kernel_events -> get_nodes" in d.stopped_by


def test_tool_call_limit(ctx, tmp_path):
    d, _ = run(ctx, looping(lambda t: [("get_jobs", {"job_id": str(70000 + t)})]), tmp_path, tool_calls=3)
    assert d.stopped_by == "tool_calls: call 4 would exceed the limit of 3"


def test_model_request_limit(ctx, tmp_path):
    d, _ = run(ctx, looping(lambda t: [("get_jobs", {"job_id": str(70000 + t)})]), tmp_path, model_requests=2)
    assert d.stopped_by == "model_requests: request 3 would exceed the limit of 2"


def test_total_token_limit(ctx, tmp_path):
    d, _ = run(ctx, looping(lambda t: [("get_jobs", {"job_id": str(70000 + t)})]), tmp_path, total_tokens=200)
    assert d.stopped_by and d.stopped_by.startswith("total_tokens:")


def test_cost_limit_from_token_prices(ctx, tmp_path):
    d, _ = run(ctx, looping(lambda t: [("get_jobs", {"job_id": str(70000 + t)})]), tmp_path,
               cost_usd=0.0001, input_usd_per_mtok=10.0, output_usd_per_mtok=30.0)
    assert d.stopped_by and d.stopped_by.startswith("cost:")


def test_wall_time_limit_checked_between_steps(ctx, tmp_path, monkeypatch):
    now = [0.0]

    def fn(messages, info):
        now[0] += 40.0  # each model turn "takes" 40 s
        return ModelResponse(parts=[ToolCallPart("get_jobs", {"job_id": str(int(now[0]))})])

    monkeypatch.setattr(limits_mod, "monotonic", lambda: now[0])
    d = diagnose(ctx, "q", model_override=FunctionModel(fn), limits=LoopLimits(wall_time_s=100),
                 audit=AuditLog(tmp_path / "audit.db"))
    assert d.stopped_by and d.stopped_by.startswith("wall_time:")


def test_builtin_model_finishes_within_default_limits(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    d = diagnose(ctx, "Job 73412 failed with an NCCL watchdog timeout. Why?", audit=AuditLog(tmp_path / "a.db"))
    assert d.stopped_by is None and d.root_cause == "gpu_hardware_fault"


def test_normalize_call_equates_near_identical_arguments():
    a = normalize_call("get_jobs", {"job_id": "A1", "limit": 5, "user": None}, {"limit": 20}, ("limit",))
    b = normalize_call("GET_JOBS", {"job_id": "  a1 "}, {"limit": 20}, ("limit",))
    c = normalize_call("get_jobs", {"job_id": "a2"}, {"limit": 20}, ("limit",))
    assert a == b != c
    assert normalize_call("t", {"xs": ["b", "A"]}) == normalize_call("t", {"xs": ["a", "B"]})
    assert normalize_call("t", {"unhealthy_only": True}, {"unhealthy_only": True}) == normalize_call("t", {})


def test_guard_stops_once_and_reports_once():
    seen: list[LimitExceeded] = []
    g = LoopGuard(LoopLimits(tool_calls=1), on_stop=seen.append)
    g.before_tool("a", {})
    for _ in range(2):
        with pytest.raises(LimitExceeded) as e:
            g.before_tool("b", {})
    assert e.value.limit == "tool_calls" and len(seen) == 1


def test_limits_from_environment(monkeypatch):
    monkeypatch.setenv("WARDEN_LIMIT_TOOL_CALLS", "7")
    monkeypatch.setenv("WARDEN_LIMIT_WALL_TIME_S", "12.5")
    lim = LoopLimits()
    assert (lim.tool_calls, lim.wall_time_s) == (7, 12.5)


def test_run_is_audited_in_order(ctx, tmp_path, monkeypatch):
    """run_start, each tool call before its result, the findings the tool returned, the diagnosis, run_end."""
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    log = AuditLog(tmp_path / "a.db")
    d = diagnose(ctx, "Job 73412 failed with an NCCL watchdog timeout. Why?", audit=log)
    recs = list(log.records(run_id=d.run_id))
    kinds = [r.kind for r in recs]
    assert kinds[0] == "run_start" and kinds[-2:] == ["diagnosis", "run_end"]
    calls = [(r.kind, r.payload["tool"]) for r in recs if r.kind in ("tool_call", "tool_result")]
    for i, (kind, tool) in enumerate(calls):
        if kind == "tool_result":
            assert ("tool_call", tool) in calls[:i]
    from_tool = [r for r in recs if r.kind == "finding" and r.payload["source"] == "get_findings"]
    assert from_tool and {f.payload["check"] for f in from_tool} >= {f.check for f in d.findings[:1]}
    assert recs[-2].payload["root_cause"] == d.root_cause and log.verify().ok


def test_cost_prices_come_from_the_gateway_config():
    from agent.limits import priced
    from gateway.config import GatewayConfig

    cfg = GatewayConfig.model_validate({
        "providers": [{"name": "vllm", "kind": "openai_compat", "openai_base_url": "http://127.0.0.1:9/v1",
                       "openai_model": "Qwen/Qwen2.5-7B-Instruct"}, {"name": "builtin", "kind": "builtin"}],
        "routes": {"llm": ["vllm", "builtin"]},
        "prices": {"Qwen/Qwen2.5-7B-Instruct": {"input_usd_per_mtok": 0.2, "output_usd_per_mtok": 0.6}}})
    lim = priced(LoopLimits(), "llm", cfg)
    assert (lim.input_usd_per_mtok, lim.output_usd_per_mtok) == (0.2, 0.6)
    assert LoopGuard(lim).cost_usd(1_000_000, 1_000_000) == pytest.approx(0.8)
    assert priced(LoopLimits(input_usd_per_mtok=5), "llm", cfg).input_usd_per_mtok == 5  # explicit wins
