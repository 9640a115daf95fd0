"""Chat sessions in-process on a bundled incident: follow-ups reuse the same Facts and the pydantic-ai
history (a FunctionModel stands in for an LLM, with real model requests disabled), fall back to
Warden's own answers when the model fails, the built-in model's follow-ups are answered from the
evidence, history trims safely, turns are kept for --resume, and cluster text prints escaped."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pydantic_ai import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from rich.console import Console

from agent.chat.commands import parse_command
from agent.chat.history import ChatLog, history_chars, trim_history
from agent.chat.repl import show_reply
from agent.chat.session import Reply
from agent.chat.start import open_chat
from agent.chat.subjects import read_question

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
Q = "Job 73412 failed with an NCCL watchdog timeout. Why?"


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    return tmp_path


def llm(seen: list[list]) -> FunctionModel:
    """Diagnoses like a model would (findings, then the output tool); follow-ups: one read tool, then text."""
    def fn(messages, info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        asked = [i for i, m in enumerate(messages) if isinstance(m, ModelRequest)
                 and any(isinstance(p, UserPromptPart) for p in m.parts)][-1]
        turn = messages[asked + 1:]  # (the question's request also carries the last turn's final tool result)
        returns = [p for m in turn for p in m.parts if isinstance(p, ToolReturnPart)]
        if info.output_tools:  # the diagnosis
            if not returns:
                return ModelResponse(parts=[ToolCallPart("get_findings", {"limit": 5}, tool_call_id="f1")])
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {
                "root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007", "job:73412"], "confidence": 0.9,
                "summary": "Xid 79 on gpu007", "evidence": [{"text": "Xid 79", "file": "kernel/gpu007.log", "line": 27}],
                "proposed_actions": [{"type": "drain_node", "node": "gpu007", "reason": "Xid 79"}]}, tool_call_id="o1")])
        if not returns:
            return ModelResponse(parts=[ToolCallPart("get_kernel_events", {"node": "gpu005"}, tool_call_id="k1")])
        content = returns[-1].content
        total = json.loads(content)["total"] if isinstance(content, str) else content.total
        return ModelResponse(parts=[TextPart(f"gpu005 has {total} kernel events and no Xid.")])
    return FunctionModel(fn)


def test_llm_follow_ups_reuse_the_facts_and_the_history(home):
    seen: list[list] = []
    start = open_chat(INCIDENT, model="test-llm", model_override=llm(seen))
    s = start.session
    facts = s.ctx.facts
    first = s.ask(Q)
    assert first.by == "diagnosis" and first.diagnosis.culprits == ["node:gpu007", "job:73412"]
    n_diag = len(s.history)
    reply = s.ask("why not gpu005?")
    # (six: the NVIDIA module loading at boot is kept as an info-level driver event)
    assert reply.by == "model" and reply.text.startswith("gpu005 has 6 kernel events")
    # the follow-up's first request carried the whole diagnosis conversation, question included
    first_followup_request = seen[2]
    assert any(isinstance(p, UserPromptPart) and p.content == Q for m in first_followup_request for p in m.parts)
    assert len(s.history) > n_diag
    s.ask("and gpu006?")
    assert s.ctx.facts is facts  # the evidence was read once, never again
    log = ChatLog(s.store)
    turns = log.turns(s.run_id)
    assert [t.role for t in turns] == ["user", "warden"] * 3
    assert [t.answered_by for t in turns if t.role == "warden"] == ["diagnosis", "model", "model"]
    assert len(log.messages(s.run_id)) == len(s.history)


def test_a_failing_model_falls_back_to_warden_s_answer(home):
    calls = {"n": 0}

    def fn(messages, info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {
                "root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9, "summary": "x"})])
        raise ConnectionError("gateway unreachable")

    s = open_chat(INCIDENT, model="test-llm", model_override=FunctionModel(fn)).session
    s.ask(Q)
    reply = s.ask("why not gpu005?")
    assert reply.by == "warden" and "model failed" in (reply.note or "") and "gateway unreachable" in reply.note
    assert "gpu005 is not named" in reply.text


def test_builtin_follow_ups_are_answered_from_the_evidence(home):
    s = open_chat(INCIDENT).session
    d = s.ask(Q).diagnosis
    assert d.root_cause == "gpu_hardware_fault" and "node:gpu007" in d.culprits
    why_not = s.ask("why not gpu005?")
    assert why_not.by == "warden"
    assert "gpu005 is not named" in why_not.text and "no Xid" in why_not.text and "gpu007.log:27" in why_not.text
    lines = s.ask("show the log lines").text
    assert "kernel/gpu007.log:27" in lines and "pretrain-73412.out:196" in lines
    cost = s.ask("what would draining cost?").text
    assert "drain gpu007" in cost and "takes 8 GPUs" in cost and "resubmit" not in cost
    # a question no rule answers: a new diagnosis of it over the same evidence
    other = s.ask("is the Lustre file system full?")
    assert other.by == "diagnosis" and other.diagnosis.run_id != d.run_id and "same evidence" in other.note


def test_trim_keeps_whole_turns_within_the_budget():
    def turn(i: int) -> list:
        # as pydantic-ai lays it out: the question shares a request with the last turn's final tool result
        last = [ToolReturnPart("final_result", "Final result processed.", tool_call_id=f"o{i - 1}")] if i else []
        return [ModelRequest(parts=[*last, UserPromptPart(content=f"question {i}")]),
                ModelResponse(parts=[ToolCallPart("get_findings", {}, tool_call_id=f"t{i}")]),
                ModelRequest(parts=[ToolReturnPart("get_findings", "x" * 5_000, tool_call_id=f"t{i}")]),
                ModelResponse(parts=[ToolCallPart("final_result", {}, tool_call_id=f"o{i}")])]
    messages = [m for i in range(20) for m in turn(i)]
    kept = trim_history(messages, 30_000)
    assert history_chars(kept) <= 30_000 and len(kept) % 4 == 0 and 0 < len(kept) < len(messages)
    assert isinstance(kept[0], ModelRequest) and [type(p) for p in kept[0].parts] == [UserPromptPart]
    assert kept[-1].parts[0].tool_call_id == "o19"
    calls = {p.tool_call_id for m in kept for p in m.parts if isinstance(p, ToolCallPart)}
    rets = {p.tool_call_id for m in kept for p in m.parts if isinstance(p, ToolReturnPart)}
    assert rets <= calls and calls - rets == {"o19"}  # every result has its call; only the newest call is open
    newest = trim_history(messages[-4:], 10)  # the newest turn always stays (less its orphaned result)
    assert len(newest) == 4 and newest[1:] == messages[-3:]


def test_commands_and_intents_parse():
    assert parse_command("/approve 2").number == 2
    assert parse_command("/deny 1 not during the run").rest == "not during the run"
    assert parse_command("/exit").name == "quit"
    for bad in ("/approve", "/approve two", "/frob", "/plan x"):
        with pytest.raises(ValueError):
            parse_command(bad)


def test_intents_name_known_subjects_only(home):
    facts = open_chat(INCIDENT).session.ctx.facts
    assert read_question("why not gpu005?", facts).intent == "node"
    assert read_question("why not gpu999?", facts).nodes == []  # no such node was read
    assert read_question("what would draining gpu005 cost?", facts).nodes == ["gpu005"]
    assert read_question("what about job 73590?", facts).jobs == ["73590"]
    assert read_question("show the log lines", facts).intent == "logs"


def test_replies_print_cluster_text_escaped():
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    show_reply(console, Reply(text="line \x1b[31mred\x1b[0m \u202egpu017 [bold]x[/bold]", by="warden"), None)
    text = out.getvalue()
    assert "\x1b" not in text and "\\x1b[31m" in text and "\\u202e" in text and "[bold]x[/bold]" in text
