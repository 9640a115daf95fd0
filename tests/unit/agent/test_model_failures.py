"""A hostile or broken model behind the gateway (issue 15 item 7, issue 13): every run ends in a
Diagnosis — partial, ``inconclusive``, ``answered_by="checks"``, ``stopped_by`` naming why — or, for a
configuration mistake, one line with exit 2. Driven through the real gateway and real loopback
upstreams that misbehave on purpose."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.audit import AuditLog
from agent.diagnose import diagnose
from agent.limits import LoopLimits
from gateway.config import GatewayConfig
from gateway.testing import StubReply, StubUpstream, provider_entry, serve_in_thread
from tests.emulators.openai_upstream import Raw
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
EVIDENCE = [{"text": "GPU hardware error event(s) on gpu007"}]


def call(name, args, i=0):
    return {"id": f"c{i}_{name}", "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


def final(i=9, **answer):
    body = {"root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9,
            "summary": "Xid 79 on gpu007", "evidence": EVIDENCE, **answer}
    return call("final_result", body, i)


def config(url, **provider):
    return GatewayConfig.model_validate({
        "providers": [provider_entry("llm", url, **provider), {"name": "builtin", "kind": "builtin"}],
        "routes": {"llm": ["llm"], "llm-or-builtin": ["llm", "builtin"]},
        "retry": {"attempts_per_provider": 1, "backoff_initial_s": 0.001, "backoff_max_s": 0.002}})


def run(tmp_path, upstream, *, alias="llm", limits=None, **provider):
    with serve_in_thread(upstream) as url:
        return diagnose(ReadContext.from_snapshot(INCIDENT / "snapshot"), "Why did job 73412 fail?", model=alias,
                        gateway_config=config(url, **provider), limits=limits or LoopLimits(),
                        audit=AuditLog(tmp_path / "audit.db"))


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))


def assert_partial(d, reason):
    assert d.stopped_by and d.stopped_by.startswith(reason + ":"), d.stopped_by
    assert d.root_cause == "inconclusive" and d.answered_by == "checks" and not d.culprits and not d.proposed_actions
    assert d.findings and "not the model's conclusion" in d.summary


def test_endless_no_op_tool_calls_stop_on_a_loop_limit(tmp_path):
    up = StubUpstream(default=StubReply(tool_calls=[call("get_cluster_overview", {})]))
    d = run(tmp_path, up)
    assert_partial(d, "repeated_call")


@pytest.mark.parametrize("reply", [
    StubReply(tool_calls=[call("get_jobs", "{not json")]),
    StubReply(tool_calls=[call("drop_all_tables", {})]),
    StubReply(content="I think it is the GPU."),                      # prose instead of the output tool
    StubReply(tool_calls=[call("get_jobs", {"limit": 10**9})]),       # out of the schema's bounds
], ids=["invalid_json_args", "unknown_tool", "prose", "out_of_bounds"])
def test_unusable_output_ends_as_invalid_output(tmp_path, reply):
    d = run(tmp_path, StubUpstream(default=reply), limits=LoopLimits(max_similar_calls=10))
    assert_partial(d, "invalid_output")


@pytest.mark.parametrize("upstream", [
    Raw(json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()),
    Raw(b"<html>oops</html>"),
    Raw(b'{"error": {"message": "boom"}}', status=500),
    Raw(b'{"choices": [{"message": {"role": "assistant", "tool_calls": ["x"]}}]}'),
], ids=["empty_choices", "garbage_body", "upstream_500", "tool_call_not_object"])
def test_broken_upstream_ends_as_upstream_error(tmp_path, upstream):
    assert_partial(run(tmp_path, upstream), "upstream_error")


def test_budget_429_ends_as_budget(tmp_path):
    up = StubUpstream(default=StubReply(tool_calls=[call("get_findings", {})]))
    with serve_in_thread(up) as url:
        cfg = config(url).model_copy(update={"run_token_cap": 10})
        d = diagnose(ReadContext.from_snapshot(INCIDENT / "snapshot"), "why?", model="llm", gateway_config=cfg,
                     audit=AuditLog(tmp_path / "audit.db"))
    assert_partial(d, "budget")
    assert "run_token_cap" in d.stopped_by


def test_a_request_in_flight_is_bounded_by_the_runs_wall_time(tmp_path):
    up = StubUpstream(default=StubReply(content="slow"), service_time_s=5.0)
    with serve_in_thread(up) as url:  # (its shutdown waits for the stub's 5 s: timed inside)
        started = time.monotonic()
        d = diagnose(ReadContext.from_snapshot(INCIDENT / "snapshot"), "Why did job 73412 fail?", model="llm",
                     gateway_config=config(url), limits=LoopLimits(wall_time_s=1.5), audit=AuditLog(tmp_path / "a.db"))
        took = time.monotonic() - started
    assert took < 4.5, f"{took:.1f} s: the request was not cut at the run's wall time (the upstream takes 5 s)"
    assert_partial(d, "timeout")
    assert "limits.wall_time_s" in d.stopped_by, d.stopped_by  # says which setting cut it


def test_a_slow_model_stops_as_timeout_naming_the_providers_timeout(tmp_path):
    # a cold local server evaluating its first prompt: the provider's read timeout cuts it first
    up = StubUpstream(default=StubReply(content="slow"), service_time_s=3.0)
    d = run(tmp_path, up, openai_timeout_s=0.5)
    assert_partial(d, "timeout")
    assert "llm: timed out: no answer within openai_timeout_s = 0.5 s" in d.stopped_by, d.stopped_by


def test_context_overflow_is_refused_before_sending(tmp_path):
    up = StubUpstream(default=StubReply(tool_calls=[call("get_findings", {})]))
    d = run(tmp_path, up, context_tokens=300, max_output_tokens=64)
    assert_partial(d, "context")
    assert up.received == [], "nothing that cannot fit is sent"


def test_max_output_tokens_and_compat_switches_reach_the_wire(tmp_path):
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=StubReply(tool_calls=[final()]))
    d = run(tmp_path, up, max_output_tokens=128, tool_choice="auto", null_content="empty")
    assert d.answered_by == "model" and d.root_cause == "gpu_hardware_fault" and d.providers == ["llm", "llm"]
    first, second = up.received
    # one limit field, the one the server honours (llama-cpp-python ignores max_completion_tokens)
    assert first["max_tokens"] == 128 and "max_completion_tokens" not in first and first["tool_choice"] == "auto"
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant and all(m["content"] == "" for m in assistant), "no content: null on the wire"


def test_the_limit_is_sent_as_max_completion_tokens_when_the_server_wants_that(tmp_path):
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=StubReply(tool_calls=[final()]))
    run(tmp_path, up, max_output_tokens=128, max_tokens_field="max_completion_tokens")
    assert all(b["max_completion_tokens"] == 128 and "max_tokens" not in b for b in up.received)


def test_no_final_answer_before_evidence_was_read(tmp_path):
    # the first response asks for the findings and answers at once; that answer is sent back
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {}, 1), final(2)])],
                      default=StubReply(tool_calls=[final(3)]))
    d = run(tmp_path, up)
    assert d.answered_by == "model" and d.root_cause == "gpu_hardware_fault"
    retry = json.dumps(up.received[1]["messages"])
    assert "No evidence has been read yet" in retry


def test_invented_evidence_is_not_accepted(tmp_path):
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])],
                      default=StubReply(tool_calls=[final(evidence=[{"text": "Xid 48 on gpu999 at 03:14"}],
                                                          culprits=["node:gpu999"])]))
    d = run(tmp_path, up)
    assert_partial(d, "invalid_output")
    assert "appear in no tool result" in json.dumps(up.received[-1]["messages"])
    # why the answers were rejected is in stopped_by, not only pydantic-ai's "Exceeded maximum output retries"
    assert "the model's last reply was sent back because: Your answer was not accepted" in d.stopped_by, d.stopped_by
    assert "node:gpu999" in d.stopped_by


def test_a_run_stopped_right_after_a_refused_answer_says_why_it_was_refused(tmp_path):
    # the real-model test's runs: a read, then an answer the validator sends back, and no request left
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])],
                      default=StubReply(tool_calls=[final(evidence=[{"text": "Xid 48 on gpu999 at 03:14"}])]))
    d = run(tmp_path, up, limits=LoopLimits(model_requests=2))
    assert_partial(d, "model_requests")
    assert "the model's last reply was sent back because:" in d.stopped_by and "not in any tool result" in d.stopped_by
    up = StubUpstream(default=StubReply(tool_calls=[call("get_cluster_overview", {})]))
    d = run(tmp_path, up)  # a loop stop with no answer refused: nothing added
    assert_partial(d, "repeated_call")
    assert "sent back" not in d.stopped_by, d.stopped_by


def test_an_answer_cut_at_max_tokens_says_so(tmp_path):
    # SmolLM2 at max_output_tokens = 256: its final_result JSON ended mid-string ("Invalid JSON: EOF ...")
    cut = StubReply(tool_calls=[call("final_result", '{"root_cause": "gpu_hardware_fault", "summary": "Xid 79 on', 1)],
                    finish_reason="length")
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=cut)
    d = run(tmp_path, up, max_output_tokens=16)
    assert_partial(d, "invalid_output")
    assert "Invalid JSON" in d.stopped_by and "finish reason 'length'" in d.stopped_by, d.stopped_by
    assert "max_output_tokens" in d.stopped_by


def test_fallback_to_the_builtin_model_is_not_credited_to_the_llm(tmp_path):
    d = run(tmp_path, Raw(b"", status=503), alias="llm-or-builtin")
    assert d.answered_by == "builtin-fallback" and d.providers and set(d.providers) == {"builtin"}
    assert d.root_cause == "gpu_hardware_fault" and d.stopped_by is None


def test_no_aiohttp_session_outlives_a_run(tmp_path, caplog):
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=StubReply(tool_calls=[final()]))
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        run(tmp_path, up)
        import gc

        gc.collect()
    assert "Unclosed" not in caplog.text


def test_unknown_alias_is_one_line_exit_2(tmp_path):
    from agent.cli.app import app

    r = CliRunner().invoke(app, ["diagnose", str(INCIDENT), "--model", "no-such-model", "--json"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "unknown model alias 'no-such-model'" in r.stderr


def test_gateway_config_is_discovered_and_its_errors_are_one_line(tmp_path):
    from agent.cli.app import app

    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=StubReply(tool_calls=[final()]))
    with serve_in_thread(up) as url:
        (home / "gateway.toml").write_text(f'[[providers]]\nname = "llm"\nkind = "openai_compat"\n'
                                           f'openai_base_url = "{url}"\n[routes]\nmine = ["llm"]\n')
        r = CliRunner().invoke(app, ["diagnose", str(INCIDENT), "--model", "mine", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["answered_by"] == "model" and d["providers"] == ["llm", "llm"] and len(up.received) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[[providers]]\nname = 1\n")
    r = CliRunner().invoke(app, ["diagnose", str(INCIDENT), "--gateway-config", str(bad)])
    assert r.exit_code == 2 and "bad.toml" in r.stderr and r.stderr.strip().count("\n") == 0


def test_tool_results_can_be_sent_as_user_messages(tmp_path):
    # llama-cpp-python's chatml-function-calling template drops `tool` messages: the model would never
    # see a result; tool_messages = "user" sends each one as a user message naming the tool
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {})])], default=StubReply(tool_calls=[final()]))
    d = run(tmp_path, up, tool_messages="user")
    assert d.answered_by == "model"
    second = up.received[1]["messages"]
    assert not [m for m in second if m["role"] == "tool"]
    result = next(m for m in second if m["role"] == "user" and m["content"].startswith("Result of get_findings:\n"))
    assert "gpu007" in result["content"]


def _reader_until_forced(body):
    """A model that only ever reads, answering only when the answer is all it is offered."""
    if body.get("tool_choice") == {"type": "function", "function": {"name": "final_result"}}:
        return StubReply(tool_calls=[final()])
    return StubReply(tool_calls=[call("get_findings", {}, len(body["messages"]))])


@pytest.mark.parametrize("limits, requests", [(LoopLimits(), 3), (LoopLimits(model_requests=2), 2)],
                         ids=["after_a_repeated_call", "on_the_last_request"])
def test_a_looping_model_is_asked_for_its_answer(tmp_path, limits, requests):
    up = StubUpstream(responder=_reader_until_forced)
    d = run(tmp_path, up, limits=limits, tool_choice="auto")
    assert d.answered_by == "model" and d.root_cause == "gpu_hardware_fault" and not d.stopped_by
    assert len(up.received) == requests
    assert all(b["tool_choice"] == "auto" for b in up.received[:-1])
    assert len({json.dumps(b["tools"]) for b in up.received}) == 1, "the same tools every time (prompt cache)"
    # the answer is asked for by name: servers that refuse "required" (llama-cpp-python's) take that
    assert up.received[-1]["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}


def test_a_bad_paging_cursor_goes_back_to_the_model(tmp_path):
    # SmolLM2 filled `more` with prose; the read tool's ValueError ended the run as an error
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_jobs", {"more": "integer"})]),
                              StubReply(tool_calls=[call("get_findings", {}, 1)])],
                      default=StubReply(tool_calls=[final()]))
    d = run(tmp_path, up)
    assert d.answered_by == "model" and d.root_cause == "gpu_hardware_fault"
    retry = json.dumps(up.received[1]["messages"])
    assert "is not a cursor" in retry
