"""Reading an OpenAI chat-completions request: the question, the tools offered, the results so far.

Pure functions over plain dicts (the wire format); nothing of Warden's tools/ is imported, so an
LLM and the built-in model see exactly the same conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Conversation", "read_conversation", "named_entities"]


@dataclass
class Conversation:
    """What the built-in model needs from a request."""

    question: str
    tool_names: list[str]
    output_tool: str | None
    """Name of the tool whose arguments are the final answer (has a ``root_cause`` parameter)."""
    results: dict[str, list[Any]] = field(default_factory=dict)
    """tool name -> decoded results, in call order."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Every (tool name, arguments) the assistant already asked for."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _decode(content: str) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content


def read_conversation(request: dict[str, Any]) -> Conversation:
    """Extract question, tools and tool results from a chat-completions request body."""
    tools = [t.get("function", {}) for t in request.get("tools") or [] if isinstance(t, dict)]
    names = [t.get("name", "") for t in tools]
    output = next((t.get("name") for t in tools
                   if "root_cause" in (t.get("parameters") or {}).get("properties", {})), None)
    messages = request.get("messages") or []
    question = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    conv = Conversation(question=question, tool_names=[n for n in names if n != output], output_tool=output)
    by_id: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", {})
                by_id[tc.get("id", "")] = fn.get("name", "")
                args = _decode(fn.get("arguments") or "{}")
                conv.calls.append((fn.get("name", ""), args if isinstance(args, dict) else {}))
        elif m.get("role") == "tool":
            name = by_id.get(m.get("tool_call_id", ""), "")
            conv.results.setdefault(name, []).append(_decode(_text(m.get("content"))))
    return conv


_JOB_RE = re.compile(r"\bjob(?:\s*id)?\s*#?\s*(\d+(?:_\d+)?)", re.IGNORECASE)
_ID_RE = re.compile(r"(?<![\w.:/~≈-])(?<!\d,)(\d{3,}(?:_\d+)?)(?![\w.:/-])(?!,\d)")  # not 1,843
_NOT_AN_ID = re.compile(
    r"\b(?:checkpoint|ckpt|step|steps|epoch|iteration|iter|port|rank|ranks|layer|batch|seq(?:uence)?|length|"
    r"version|v|gpus?|nodes?|tokens?|errors?|hours?|minutes?|seconds?|mb|gb|tb|gib|mib|w|watts?|mhz|size|count|"
    r"above|over|below|under|exceeds?|exceeding|than)\s*[#=:]?\s*$|(?:[<>]=?|[≥≤])\s*$",
    re.IGNORECASE)
"""A number right after one of these words is a step, a count, a size or a threshold, not a job id (``checkpoint
18000``, ``queue size > 5000``)."""
_COUNTED = re.compile(
    r"\s+(?:[A-Za-z][\w-]*\s+){0,3}?(?:array\s+)?(?:tasks|jobs|nodes|gpus|pods|ranks|workers|steps|files|hosts|"
    r"replicas|cards|users|minutes|hours|seconds|days|tokens|samples|images|bytes)\b|\s*(?:tflops|gb/s|gbps|gib|gb|mb|ms|s/it|it/s|%)(?![a-z])",
    re.IGNORECASE)
"""A number followed (within a few words) by a plural count noun counts things, not a job id (``92 of their 100
AlphaFold array tasks``)."""
_MAX_JOB_ID = 2 ** 32
"""Slurm job ids are 32-bit: a longer number is a size or a count (``allocate 16525557760 bytes``)."""
_UNIT_RATIO = re.compile(r"^(?:t?flops|tokens?|samples?|images?|gb|gib|mb|it|s|ms|w)/(?:gpu|node|s|sec|step|it|iter)$")
"""``TFLOPS/GPU``, ``tokens/s``: a unit, not a ``namespace/pod``."""
_HOST_RANGE_RE = re.compile(r"(?<![\w.-])([a-z][a-z_]*)(\d{2,6})-(\d{2,6})(?![\w.-])", re.IGNORECASE)
"""A host range without brackets (``dgx007-010``): letters, then two numbers of one width; ``ip-10-42-19-77``
and ``gpu-node-11`` are names, not ranges."""
_HOSTLIST_RE = re.compile(r"\b([a-z][\w-]*)\[([\d,\-]{1,40})\]", re.IGNORECASE)
"""A Slurm hostlist in the question (``train-st-p4d-[1-4]``, ``gpu[01-03,07]``)."""


def _expand(prefix: str, ranges: str, limit: int = 64) -> list[str]:
    """The host names of ``prefix[ranges]``, zero padding kept, at most ``limit``."""
    out: list[str] = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            continue
        for n in range(int(lo), int(hi or lo) + 1):
            out.append(f"{prefix}{n:0{len(lo)}d}")
            if len(out) >= limit:
                return out
    return out


_GPU_MODEL = re.compile(r"^(?:[abhlvtkp]\d{1,3}[sx]?|gb\d{3}|gh\d{3}|mi\d{3}[ax]?|rtx\d{4}|sxm\d|hgx\d?|dgx\d?)$")
"""GPU models and form factors (``H100``, ``A100``, ``L40S``, ``GB200``, ``MI300X``, ``SXM5``): what the question's
hardware is, not a host it names."""
_HOST_RE = re.compile(r"\b([a-z][a-z-]*\d+[a-z0-9-]*)\b", re.IGNORECASE)
_NAME_RE = re.compile(r"(?<![\w.-])([a-z0-9][a-z0-9.-]*[a-z0-9](?:/[a-z0-9][a-z0-9.-]*[a-z0-9])?)(?![\w-])")
"""Kubernetes-style names (``ml-train/whisper-ft-worker-0``, ``ip-10-42-19-77.ec2.internal``)."""


def named_entities(question: str) -> set[str]:
    """Job ids, host-like and Kubernetes-style names the question mentions (``4242``, ``gpu017``,
    ``ml-train/whisper-ft-worker-0``), lower case."""
    # A hostlist quoted from a field (``UnavailableNodes:gpu-a-[029-032]``) is the job's state, not a subject.
    lists = [m for m in _HOSTLIST_RE.finditer(question) if question[max(0, m.start() - 1):m.start()] not in (":", "=")]
    hosts = {h for m in lists for h in _expand(m.group(1).lower(), m.group(2))}
    question = _HOSTLIST_RE.sub(" ", question)  # the list's prefix and ranges are not names of their own
    for m in _HOST_RANGE_RE.finditer(question):  # ``dgx007-010``: a person's way of writing dgx[007-010]
        if len(m.group(2)) == len(m.group(3)) and int(m.group(2)) < int(m.group(3)):
            hosts |= set(_expand(m.group(1).lower(), f"{m.group(2)}-{m.group(3)}"))
    question = _HOST_RANGE_RE.sub(" ", question)
    found = {m.group(1) for m in _JOB_RE.finditer(question)} | hosts
    found |= {m.group(1) for m in _ID_RE.finditer(question)
              if int(m.group(1).split("_")[0]) < _MAX_JOB_ID
              and not _NOT_AN_ID.search(question[max(0, m.start() - 24):m.start()])
              and not _COUNTED.match(question[m.end():m.end() + 48])}
    found |= {h for m in _HOST_RE.finditer(question) if not _GPU_MODEL.match(h := m.group(1).lower())}
    found |= {m.group(1).lower().rstrip(".") for m in _NAME_RE.finditer(question.lower())
              if ("-" in m.group(1) or "/" in m.group(1)) and not _UNIT_RATIO.match(m.group(1))}
    return found
