"""What a failure on the model side of a run means: a stop reason for a partial Diagnosis, or a
configuration mistake that ends the command with one line (exit 2).

The model is reached through Warden's gateway, so its failures arrive as pydantic-ai exceptions
wrapping the gateway's typed errors (``gateway.errors``: the HTTP status and ``error.code``):

======================================  =====================  =====================================
failure                                 stop reason            example
======================================  =====================  =====================================
gateway 429 (budget, rate limit, cap)   ``budget``             key_tokens_per_day for key:alice
400 ``context_length_exceeded``         ``context``            prompt 9,100 tokens > context 8,192
504 ``deadline_exceeded``, time-outs    ``timeout``            no answer within the run's wall time
504 ``upstream_timeout``                ``timeout``            no answer within openai_timeout_s = 120 s
5xx, 502, connection errors             ``upstream_error``     every provider failed
the model's output was unusable         ``invalid_output``     invalid tool arguments after retries
404 unknown alias, 401 bad key,         (re-raised: one line,  unknown model alias 'smolm2'
WARDEN_GATEWAY_URL unreachable            exit 2)
======================================  =====================  =====================================

A stopped run is never credited to the model: ``partial_diagnosis`` answers ``inconclusive`` with
``answered_by="checks"``, and the deterministic checks' findings are listed as their own view.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai.exceptions import (ModelAPIError, ModelConnectionError, ModelContextWindowExceededError,
                                    ModelHTTPError, ModelRequestTimeout, ModelTimeoutError, UnexpectedModelBehavior)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

from agent.evidence_time import stamp_evidence, stamp_findings
from agent.limits import LimitExceeded
from gateway.client import GATEWAY_URL_ENV
from tools.models.findings import Diagnosis
from tools.read.context import ReadContext

__all__ = ["last_rejection", "model_stop", "partial_diagnosis"]

_CONFIG_CODES = {"model_not_found", "invalid_api_key"}


def _error_body(exc: ModelHTTPError) -> tuple[str | None, str]:
    body: Any = exc.body
    err = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(err, dict):
        return err.get("code"), str(err.get("message") or exc.message)
    return None, str(exc.message)


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


def model_stop(exc: BaseException) -> LimitExceeded:
    """The stop reason for a model-side failure, as a LimitExceeded naming it.

    Raises:
        BaseException: ``exc`` itself when it is a configuration mistake (an alias the gateway does not
            route, a missing or unknown virtual key, a WARDEN_GATEWAY_URL with no gateway behind it:
            the CLI ends with one line, exit 2) or not a model-side failure at all.
    """
    if isinstance(exc, LimitExceeded):
        return exc
    if isinstance(exc, ModelHTTPError):
        code, message = _error_body(exc)
        status = exc.status_code
        if code in _CONFIG_CODES or status in (401, 403, 404):
            raise exc  # a configuration mistake: the CLI prints its one line (agent.cli.errors), exit 2
        if status == 429:
            return LimitExceeded("budget", _one_line(message))
        if code == "context_length_exceeded" or isinstance(exc, ModelContextWindowExceededError):
            return LimitExceeded("context", _one_line(message))
        if code == "deadline_exceeded":  # the gateway's deadline is what the run had left
            return LimitExceeded("timeout", f"{_one_line(message)} (what was left of the run's wall time, "
                                            "limits.wall_time_s)")
        if status in (408, 504) or code == "upstream_timeout":
            return LimitExceeded("timeout", _one_line(message))
        return LimitExceeded("upstream_error", f"HTTP {status}: {_one_line(message)}")
    if isinstance(exc, ModelContextWindowExceededError):
        return LimitExceeded("context", _one_line(str(exc)))
    if isinstance(exc, ModelConnectionError) and not isinstance(exc, ModelTimeoutError) \
            and os.environ.get(GATEWAY_URL_ENV):
        raise exc  # WARDEN_GATEWAY_URL names no running gateway: a configuration mistake, exit 2
    if isinstance(exc, (ModelTimeoutError, ModelRequestTimeout)):  # the client's timeout: the run's time left
        return LimitExceeded("timeout", f"{_one_line(str(exc))} (within what was left of the run's wall time, "
                                        "limits.wall_time_s)")
    if isinstance(exc, ModelAPIError):
        return LimitExceeded("upstream_error", _one_line(str(exc)))
    if isinstance(exc, UnexpectedModelBehavior):
        return LimitExceeded("invalid_output", _one_line(str(exc)))
    raise exc


def _feedback_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # pydantic ErrorDetails of arguments that did not validate
        return "; ".join(": ".join(x for x in (".".join(map(str, e.get("loc") or ())), str(e.get("msg", ""))) if x)
                         if isinstance(e, dict) else str(e) for e in content[:3])
    return str(content)


def _retry_text(message: ModelRequest) -> str | None:
    for part in reversed(message.parts):
        kind = getattr(part, "part_kind", "")
        if kind in ("retry-feedback", "retry-prompt") or (kind == "tool-return"
                                                           and getattr(part, "outcome", "") == "retried"):
            return _one_line(_feedback_text(part.content), 240)
    return None


def last_rejection(messages: list[ModelMessage], *, latest_only: bool = False) -> str | None:
    """Why the model's last unusable answer was sent back to it (the retry text of its last rejected
    answer or tool call: the output validator's reason, the arguments that did not validate), one line;
    None when nothing was sent back. Gives ``invalid_output`` its cause, not only pydantic-ai's
    "Exceeded maximum output retries". An answer the server cut at ``max_tokens`` (finish reason
    ``length``: its JSON then ends mid-string) says so, naming ``max_output_tokens``.

    ``latest_only``: only when the rejection is the run's last message (the retry a loop limit then
    kept from being sent: a run stopped on ``model_requests`` right after its answer was refused).
    """
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        why = _retry_text(message) if isinstance(message, ModelRequest) else None
        if why is None:
            if latest_only:
                return None
            continue
        answer = next((m for m in reversed(messages[:i]) if isinstance(m, ModelResponse)), None)
        if answer is not None and answer.finish_reason == "length":
            why += (" (the answer was cut at its max_tokens, finish reason 'length': the gateway config's "
                    "max_output_tokens is too small for it)")
        return why
    return None


def partial_diagnosis(ctx: ReadContext, question: str, model: str, stop: LimitExceeded) -> Diagnosis:
    """What is known when a run stops before the model answered.

    The answer is ``inconclusive`` with no culprits or actions: the model said nothing that could be
    checked. The checks' findings stay in ``findings`` as their own view (``answered_by="checks"``); the
    summary quotes their strongest one, with its evidence, as unconfirmed and not the model's.
    """
    findings = ctx.findings
    top = findings[0] if findings else None
    why = f"{stop.limit}: {stop.detail}"
    checks = (f" The checks' strongest finding, not confirmed and not the model's conclusion: {top.root_cause} — "
              f"{top.message}." if top else " No finding.")
    return Diagnosis(question=question, root_cause="inconclusive", culprits=[],
                     evidence=stamp_evidence(top.evidence[:3], ctx.facts) if top else [], confidence=0.0,
                     summary=f"Partial diagnosis: the run stopped before the model answered ({why}).{checks}",
                     findings=stamp_findings(findings, ctx.facts), stopped_by=why, model=model, answered_by="checks",
                     unreadable=list(ctx.facts.unreadable), nothing_read=ctx.facts.records_read() == 0)
