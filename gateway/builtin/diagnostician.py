"""The built-in model: a deterministic diagnostician driving the same tool loop an LLM would.

Turn 1: ask for the evidence overview and the checks' findings (and, when the question names a job,
that job's queue entry and log events). Turn 2: weigh the findings and answer through the output
tool. It reasons only from what the tools returned and the question's own words.

Weighing: findings are grouped by root cause; a cause scores its best confidence, plus a little for
corroborating findings, plus a bonus when its culprits are what the question asks about. Evidence
for a specific cause (an Xid) therefore beats a shared symptom (an NCCL timeout), as DESIGN.md asks.
Below ``HEALTHY_BELOW`` nothing is actionable: the answer is ``healthy`` with no actions.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from gateway.builtin.conversation import Conversation, named_entities, read_conversation

__all__ = ["respond", "decide", "HEALTHY_BELOW"]

HEALTHY_BELOW = 0.5
_RELEVANCE_BONUS = 0.1
_UNRELATED_PENALTY = 0.2
_CORROBORATION = 0.03

_FIRST_LOOK = ("get_cluster_overview", "get_findings")

_LABELS = {
    "gpu_hardware_fault": "GPU hardware fault",
    "interconnect_fault": "interconnect fault",
    "straggler_node": "straggler node",
    "metadata_wall": "Lustre metadata server overloaded",
    "storage_full": "storage full",
    "gpu_oom": "GPU out of memory",
    "host_oom": "host out of memory",
    "scheduler_wait": "job waiting on the scheduler",
    "node_unresponsive": "node not responding",
    "checkpoint_corrupt": "corrupt checkpoint",
    "user_code_error": "error in the job's own code",
    "thermal_power_throttle": "GPU clocks throttled by thermal/power limits",
    "node_software_fault": "node software fault",
    "timeout_without_checkpoint": "time limit reached without a checkpoint",
}


def _call(name: str, args: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _first_turn(conv: Conversation) -> list[dict[str, Any]]:
    calls = [(name, {}) for name in _FIRST_LOOK if name in conv.tool_names]
    named = named_entities(conv.question)
    # On a busy cluster the findings about what the question names may not make the overall top few.
    if "get_findings" in conv.tool_names:
        calls += [("get_findings", {"culprit": e}) for e in sorted(named)[:4]]
    jobs = sorted(e for e in named if e[:1].isdigit())
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


def _names(culprit: str) -> set[str]:
    """How a question may name a culprit: ``pod:ns/name`` as ``ns/name`` or ``name``."""
    name = culprit.split(":", 1)[-1].lower()
    return {name, name.rsplit("/", 1)[-1]}


def _mentions(finding: dict[str, Any], entities: set[str]) -> bool:
    return any(_names(c) & entities for c in finding.get("culprits", []))


def decide(question: str, findings: list[dict[str, Any]]) -> dict[str, Any]:
    """The Diagnosis arguments (root_cause, culprits, evidence, confidence, summary, proposed_actions)
    from the question and the checks' findings (dicts as the get_findings tool returns them)."""
    entities = named_entities(question)
    asked = bool(entities) and any(_mentions(f, entities) for f in findings)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        groups[f["root_cause"]].append(f)
    scores: dict[str, float] = {}
    for cause, fs in groups.items():
        fs.sort(key=lambda f: -f["confidence"])
        score = fs[0]["confidence"] + _CORROBORATION * min(len(fs) - 1, 3)
        if asked:
            score += _RELEVANCE_BONUS if any(_mentions(f, entities) for f in fs) else -_UNRELATED_PENALTY
        scores[cause] = round(min(score, 0.99), 3)
    ranked = sorted(scores, key=lambda c: -scores[c])
    if not ranked or scores[ranked[0]] < HEALTHY_BELOW:
        seen = "; ".join(f"{f['message']} (confidence {f['confidence']:.2f})" for f in findings[:3])
        return {"root_cause": "healthy", "culprits": [], "evidence": [], "proposed_actions": [],
                "confidence": 0.8 if not findings else round(1 - scores[ranked[0]], 2),
                "summary": "No fault that needs action: the checks found nothing above the action threshold."
                + (f" Minor signals: {seen}." if seen else "")}
    cause = ranked[0]
    chosen = groups[cause]
    if asked:
        chosen = [f for f in chosen if _mentions(f, entities)] or chosen
    culprits: list[str] = []
    evidence: list[dict[str, Any]] = []
    actions: list[dict[str, Any]] = []
    seen_actions: set[str] = set()
    for f in chosen:
        for c in f.get("culprits", []):
            if c not in culprits:
                culprits.append(c)
        evidence.extend(f.get("evidence", [])[:3])
        for a in f.get("suggested_actions", []):
            key = json.dumps({k: a.get(k) for k in ("type", "node", "job", "pod", "namespace")}, sort_keys=True)
            if key not in seen_actions:
                seen_actions.add(key)
                actions.append(a)
    others = [c for c in ranked[1:] if scores[c] >= HEALTHY_BELOW - 0.2]
    label = _LABELS.get(cause, cause)
    summary = f"{label[:1].upper()}{label[1:]}: {chosen[0]['message']}."
    if len(chosen) > 1:
        summary += " Also: " + "; ".join(f["message"] for f in chosen[1:3]) + "."
    if others:
        summary += " Other signals, read as symptoms or lesser causes: " + ", ".join(
            f"{c} ({scores[c]:.2f})" for c in others[:3]) + "."
    return {"root_cause": cause, "culprits": culprits[:8], "evidence": evidence[:8],
            "confidence": scores[cause], "summary": summary, "proposed_actions": actions[:6]}


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
    answer = decide(conv.question, _findings(conv))
    return {"role": "assistant", "content": None,
            "tool_calls": [_call(conv.output_tool, answer, 99)]}
