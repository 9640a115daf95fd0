"""The output validator: a Diagnosis is accepted only when it rests on evidence the tools returned.

Two rules, checked on the model's answer (``DiagnosisDraft``) against the read-tool results it had
seen before answering (the tool returns in the run's messages):

1. **No answer before evidence.** An answer given before any read tool returned — including one in
   the same response as the first read calls — is sent back: read first.
2. **Cited evidence must be real.** Every evidence item must be found in what the tools returned (its
   file or metric name, or its text), every culprit's name too; a fault (any cause but ``healthy`` or
   ``inconclusive``) needs at least one such item.

A rejected answer goes back to the model as a retry prompt naming what was wrong (pydantic-ai's
``ModelRetry``); when the model's output retries run out, the run ends with ``invalid_output``
(agent.model_failures) — a partial, inconclusive Diagnosis, never an unchecked one.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from agent.toolset import TOOL_NAMES
from tools.models.findings import DiagnosisDraft, Evidence

__all__ = ["check_grounded", "seen_tool_text"]

_NO_FAULT = ("healthy", "inconclusive")


def seen_tool_text(messages: list[Any]) -> str:
    """Everything the read tools returned so far in a run, lower-cased, whitespace collapsed."""
    out: list[str] = []
    for m in messages:
        if isinstance(m, ModelRequest):
            out += [p.model_response_str() for p in m.parts
                    if isinstance(p, ToolReturnPart) and p.tool_name in TOOL_NAMES]
    return " ".join(" ".join(out).lower().split())


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def _grounded(e: Evidence, seen: str) -> bool:
    if e.file and _norm(e.file) in seen:
        return True
    if e.metric and _norm(e.metric) in seen:
        return True
    text = _norm(e.text)
    return len(text) >= 12 and text[:120] in seen  # a quote, not a word that occurs anywhere


def check_grounded(ctx: RunContext[Any], output: Any) -> Any:
    """pydantic-ai output validator (see the module docstring).

    Raises:
        ModelRetry: naming what to fix, when the answer breaks a rule.
    """
    if not isinstance(output, DiagnosisDraft):
        return output  # e.g. DeferredToolRequests: a run paused for approval
    seen = seen_tool_text(ctx.messages)
    if not seen:
        raise ModelRetry("No evidence has been read yet. Call get_cluster_overview and get_findings first, "
                         "then answer from what they return.")
    problems = []
    fake = [e.text[:60] for e in output.evidence if not _grounded(e, seen)]
    if fake:
        problems.append(f"these evidence items are not in any tool result: {fake}; quote the file, metric or "
                        "text exactly as a tool returned it")
    unknown = [c for c in output.culprits if _norm(c.split(":", 1)[-1]) not in seen]
    if unknown:
        problems.append(f"these culprits appear in no tool result: {unknown}")
    if output.root_cause not in _NO_FAULT and not [e for e in output.evidence if _grounded(e, seen)]:
        problems.append(f"root cause {output.root_cause} cites no evidence; add the finding's evidence "
                        "(file and line, or metric) that supports it")
    if problems:
        raise ModelRetry("Your answer was not accepted: " + "; ".join(problems) + ".")
    return output
