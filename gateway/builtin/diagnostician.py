"""The built-in model: a deterministic diagnostician driving the same tool loop an LLM would.

Turn 1: ask for the evidence overview, the checks' findings (overall and about each subject the question
names), the evidence coverage (what was read, what not, what is known of each subject), and, when the
question names a job, that job's queue entry and log events. Turn 2: rank the findings by the cause
precedence table its instructions carry (gateway.builtin.precedence) and answer through the output tool
(gateway.builtin.decide). It reasons only from what the tools returned and the question's own words.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.builtin.conversation import Conversation, named_entities, read_conversation
from gateway.builtin.decide import HEALTHY_BELOW, decide
from gateway.builtin.precedence import read_precedence

__all__ = ["respond", "decide", "HEALTHY_BELOW"]

_FIRST_LOOK = ("get_cluster_overview", "get_findings")


def _call(name: str, args: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _first_turn(conv: Conversation) -> list[dict[str, Any]]:
    calls: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in _FIRST_LOOK if name in conv.tool_names]
    if "get_findings" in conv.tool_names:
        calls[-1] = ("get_findings", {"limit": 50})
    named = sorted(named_entities(conv.question))
    if "get_evidence_coverage" in conv.tool_names:
        calls.append(("get_evidence_coverage", {"subjects": named[:10]}))
    # On a busy cluster the findings about what the question names may not make the overall top few.
    if "get_findings" in conv.tool_names:
        calls += [("get_findings", {"culprit": e}) for e in named[:4]]
    jobs = [e for e in named if e[:1].isdigit()]
    for job in jobs[:3]:
        if "get_jobs" in conv.tool_names:
            calls.append(("get_jobs", {"job_id": job}))
        if "get_job_log_events" in conv.tool_names:
            calls.append(("get_job_log_events", {"job": job}))
    return [_call(name, args, i) for i, (name, args) in enumerate(calls)]


def _findings(conv: Conversation) -> list[dict[str, Any]]:
    """Every finding the get_findings calls returned, once each (calls may overlap)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for result in conv.results.get("get_findings", []):
        if isinstance(result, dict):
            for f in result.get("findings", []):
                key = json.dumps(f, sort_keys=True) if isinstance(f, dict) else ""
                if key and key not in seen:
                    seen.add(key)
                    out.append(f)
    return out


def _coverage(conv: Conversation) -> dict[str, Any] | None:
    results = [r for r in conv.results.get("get_evidence_coverage", []) if isinstance(r, dict)]
    return results[-1] if results else None


def respond(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one chat-completions request with the next assistant message.

    Args:
        request: the OpenAI request body (``messages``, ``tools``).

    Returns:
        ``{"role": "assistant", "content": None, "tool_calls": [...]}`` asking for evidence, or the
        final call of the output tool carrying the Diagnosis; plain text when no tools are offered.
    """
    conv = read_conversation(request)
    if not conv.output_tool:
        return {"role": "assistant", "content": "The built-in model answers only diagnosis requests with tools."}
    if not conv.results:
        calls = _first_turn(conv)
        if calls:
            return {"role": "assistant", "content": None, "tool_calls": calls}
    table = read_precedence(request.get("messages") or [])
    answer = decide(conv.question, _findings(conv), table, named_entities(conv.question), _coverage(conv))
    return {"role": "assistant", "content": None, "tool_calls": [_call(conv.output_tool, answer, 99)]}
