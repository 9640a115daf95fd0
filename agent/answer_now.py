"""When the next model request must be the answer: the model is looping, or it is the run's last.

A small model (SmolLM2-135M on llama.cpp) calls the same read tool again and again until the loop
guard stops the run, and a run that stops on a limit carries no answer of the model's at all. So
the request after a repeated call (one whose normalized signature was already made), and the
last request the run's ``model_requests`` allows, ask for the output tool by name (pydantic-ai's
``tool_choice`` setting, sent as ``{"type": "function", "function": {"name": "final_result"}}``),
which servers that turn schemas into a grammar (llama.cpp's) answer with a well-formed answer. Before any tool was called nothing is
forced: an answer then is rejected by the output validator anyway (read first).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent.limits import LoopGuard

__all__ = ["answer_now", "answer_only"]


def answer_now(guard: LoopGuard) -> str | None:
    """Why the next request (already counted by ``guard.before_request``) must answer, or None:
    ``"last_request"`` or ``"repeated_call"``."""
    if not guard.calls:
        return None
    if guard.requests >= guard.limits.model_requests:
        return "last_request"
    if guard.calls[-1] in guard.calls[:-1]:
        return "repeated_call"
    return None


def answer_only(request_context: Any) -> Any:
    """The pydantic-ai request context with ``tool_choice`` set to the output tool(s): every tool is
    still sent (the prompt's prefix, and a server's cache of it, stay the same) but only the answer
    may be called."""
    names = [t.name for t in request_context.model_request_parameters.output_tools or []]
    if not names:
        return request_context
    settings = {**(request_context.model_settings or {}), "tool_choice": names}
    return replace(request_context, model_settings=settings)
