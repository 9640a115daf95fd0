"""Issue 15 items 7 and 11, walked again: a model's answer and a policy limit that validated but could
not be used.

Before: a model's final answer with a 2,000,000-character summary was accepted as the Diagnosis
(answered_by model) and written whole to the audit log and the run store, and would be printed to
the terminal and posted to Slack; now the answer's schema bounds the summary (8,000 characters, also
sent to the model as ``maxLength``), so such an answer is refused and the run ends as a partial
Diagnosis (``stopped_by invalid_output``). A policy config limit above Cedar's 64-bit Long
(``max_drains_per_partition_per_hour: 100000000000000000000``) validated and then denied every
action as ``evaluation-error``; now it is refused naming the file and field.

The model is a loopback upstream behind the real gateway; the policy is the real Cedar engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.audit import AuditLog
from agent.diagnose import diagnose
from gateway.config import GatewayConfig
from gateway.testing import StubReply, StubUpstream, provider_entry, serve_in_thread
from policies import PolicyConfigError
from policies.config import PolicyConfig
from tools.models.findings import DiagnosisDraft
from tools.read.context import ReadContext

INCIDENT = Path(__file__).parents[2] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


def _call(name: str, args: dict, i: int) -> dict:
    return {"id": f"c{i}_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


@pytest.mark.parametrize(("chars", "stops"), [
    (20_000, ("invalid_output",)),
    # the refused answer goes back to the model with the retry prompt: the token limit may stop it first
    (2_000_000, ("invalid_output", "total_tokens")),
])
def test_an_over_long_summary_is_refused_and_the_run_ends_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  chars: int, stops: tuple[str, ...]) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    answer = {"root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9,
              "summary": "A" * chars, "evidence": [{"text": "GPU hardware error event(s) on gpu007"}]}
    up = StubUpstream(script=[StubReply(tool_calls=[_call("get_findings", {}, 0)])],
                      default=StubReply(tool_calls=[_call("final_result", answer, 1)]))
    with serve_in_thread(up) as url:
        cfg = GatewayConfig.model_validate({"providers": [provider_entry("llm", url)], "routes": {"llm": ["llm"]},
                                            "retry": {"attempts_per_provider": 1}})
        d = diagnose(ReadContext.from_snapshot(INCIDENT / "snapshot"), "Why did job 73412 fail?", model="llm",
                     gateway_config=cfg, audit=AuditLog(tmp_path / "audit.db"))
    assert d.stopped_by and d.stopped_by.startswith(stops), d.stopped_by
    assert d.answered_by == "checks" and len(d.summary) < 2000
    assert "A" * 10_000 not in (tmp_path / "audit.db").read_bytes().decode("utf-8", "replace")


def test_the_bound_is_in_the_schema_the_model_is_sent() -> None:
    props = DiagnosisDraft.model_json_schema()["properties"]
    assert props["summary"]["maxLength"] == 8000


@pytest.mark.parametrize("field", ["max_drains_per_partition_per_hour", "max_running_gpu_hours_killed",
                                   "max_other_users_jobs_touched"])
def test_a_policy_limit_beyond_cedars_long_is_refused_naming_the_field(tmp_path: Path, field: str) -> None:
    p = tmp_path / "policy.yaml"
    p.write_text(f"{field}: 100000000000000000000\n")
    with pytest.raises(PolicyConfigError, match=f"{field}"):
        PolicyConfig.from_file(p)
    p.write_text(f"{field}: 9223372036854775807\n")  # Cedar's largest Long still works
    assert getattr(PolicyConfig.from_file(p), field) == 2**63 - 1
    from policies import PolicyEngine
    from policies.engine import PolicyRequest

    decision = PolicyEngine.load(None, p).evaluate(PolicyRequest(
        principal="alice", groups=["oncall"], action="drain_node", resource_type="Node", resource_id="gpu01",
        partition="gpu", dry_run=False, approved=True, approver="bob", approver_groups=["oncall"], requester="alice"))
    assert decision.decision == "allow" and "evaluation-error" not in decision.policy_ids
