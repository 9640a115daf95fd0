"""Redaction of outgoing request text: secrets, API keys, bearer tokens, passwords, private keys, e-mails,
and (when configured) user names.

Each kind runs only when a literal hint occurs in the text, so clean text costs a few substring scans.
Matches become ``[REDACTED:<kind>]``. Applied by the router to every provider whose
``redacts`` is True (every provider but the built-in one), on a copy of the request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from gateway.config import RedactionPattern

__all__ = ["BUILTIN_PATTERNS", "Redactor", "user_name_patterns"]

_VALUE = r"(?:\\\"[^\"\n]*?\\\"|'[^'\n]*'|\"[^\"\n]*\"|[^\s\"',;]+)"
"""A value after ``key=`` / ``key:``: escaped-JSON quoted, single- or double-quoted (spaces allowed), or bare."""
_LONG_VALUE = r"(?:\\\"[^\"\n]*?\\\"|'[^'\n]{4,}'|\"[^\"\n]{4,}\"|[^\s\"',;]{6,})"

BUILTIN_PATTERNS: dict[str, str] = {
    "private_key": r"-----begin [a-z ]*private key(?: block)?-----[\s\S]*?"
                   r"(?:-----end [a-z ]*private key(?: block)?-----|\Z)",
    "url_credentials": r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@",
    "bearer_token": r"bearer\s+[a-z0-9._~+/=-]{8,}",
    "basic_auth": r"authorization\"?\s*[:=]\s*\"?basic\s+[a-z0-9+/]{8,}={0,2}",
    "openai_key": r"\bsk-(?:proj-|ant-)?[a-z0-9_-]{16,}",
    "aws_access_key": r"\b(?:akia|asia)[0-9a-z]{16}\b",
    "github_token": r"\b(?:gh[pousr]_[a-z0-9]{30,}|github_pat_[a-z0-9_]{30,})",
    "gitlab_token": r"\bglpat-[a-z0-9_-]{20,}",
    "slack_token": r"\b(?:xox[abposre]-[a-z0-9-]{10,}|xapp-\d-[a-z0-9-]{10,})",
    "slack_webhook": r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[a-z0-9/_-]{8,}",
    "google_api_key": r"\baiza[0-9a-z_-]{35}",
    "huggingface_token": r"\bhf_[a-z0-9]{30,}",
    "npm_token": r"\bnpm_[a-z0-9]{36}\b",
    "jwt": r"\beyj[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}",
    "password": r"(?:password|passwd|passphrase|pwd|storagepass|dbpass)\w*(?:\\?[\"'])?\s*(?:=>|[:=])\s*" + _VALUE,
    "secret_assignment": r"(?:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|accountkey|sharedaccesskey)"
                         r"[a-z0-9_]*(?:\\?[\"'])?\s*[:=]\s*" + _LONG_VALUE,
    "cli_password": r"(?:\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?\s-p(?P<v>[^\s'\"]\S*)"
                    r"|--(?:[a-z0-9]+[-_])*(?:password|passwd|pass)\s+(?P<v2>'[^'\n]*'|\"[^\"\n]*\"|[^\s-]\S*)"
                    r"|\bmachine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(?P<v7>\S+)"
                    r"|\bsshpass\s+-p\s*(?P<v3>'[^'\n]*'|\"[^\"\n]*\"|\S+)"
                    r"|\bredis-cli\b[^\n]*?\s-a\s+(?P<v4>\S+)"
                    r"|\bipmitool\b[^\n]*?\s-p\s+(?P<v5>\S+)"
                    r"|\bcurl\b[^\n]*?\s(?:-u|--user)\s*(?P<v6>'[^'\n]*'|\"[^\"\n]*\"|[^\s:]+:\S+))",
    "url_signature": r"[?&](?:sig|signature|x-amz-signature|x-goog-signature)=(?P<v>[^&\s\"']{8,})",
    "stripe_key": r"\b[rs]k_(?:live|test)_[a-z0-9]{16,}",
    "email": r"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b",
}
"""Kind -> regular expression over the lower-cased text. Earlier kinds win where matches overlap. A
pattern with named groups (``v``, ``v2`` ...) redacts only what they matched (``mysql -p[REDACTED:...]``),
so the model still sees which command or flag it was."""

_HINTS: dict[str, tuple[str, ...]] = {
    "private_key": ("private key",),
    "url_credentials": ("://",),
    "bearer_token": ("bearer",),
    "basic_auth": ("basic",),
    "openai_key": ("sk-",),
    "aws_access_key": ("akia", "asia"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-",),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "google_api_key": ("aiza",),
    "huggingface_token": ("hf_",),
    "npm_token": ("npm_",),
    "jwt": ("eyj",),
    "password": ("pass", "pwd"),
    "secret_assignment": ("secret", "token", "key"),
    "cli_password": ("-p", "--pass", "sshpass", "redis-cli", "ipmitool", "curl", "machine"),
    "url_signature": ("sig",),
    "stripe_key": ("k_live_", "k_test_"),
    "email": ("@",),
}
"""Lower-case literals, one of which must occur for the kind's regex to run."""


def user_name_patterns(names: Iterable[str]) -> list[RedactionPattern]:
    """Site patterns that redact these user names wherever they stand as a whole word (kind
    ``user_name``): ``alice`` in ``/home/alice/run.sh`` or ``UserId=alice(20417)``, not in ``malice``.

    Put them in the gateway config's ``redaction.extra_patterns`` (``model_dump()`` of each).
    Names are matched literally (regex characters escaped), longest first.
    """
    unique = sorted({n for n in names if n}, key=lambda n: (-len(n), n))
    if not unique:
        return []
    alternatives = "|".join(re.escape(n) for n in unique)
    return [RedactionPattern(name="user_name", pattern=rf"(?<![\w.-])(?:{alternatives})(?![\w-])")]


_SENSITIVE_KEY = re.compile(r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
                            r"|accountkey|credential)")


def _span(m: re.Match[str]) -> tuple[int, int]:
    """The span to redact: the first named group that matched, else the whole match."""
    for name, value in m.groupdict().items():
        if value is not None and name.startswith("v"):
            return m.span(name)
    return m.span()


class Redactor:
    """Replaces secrets in strings and in OpenAI request bodies.

    Built-in kinds are matched on the lower-cased text, and each runs only when one of its
    literal hints occurs there, so clean text costs a few substring scans. Site patterns run
    on the original text, case-sensitive as written.

    Args:
        extra: Site patterns (``gateway.config.RedactionPattern``), applied after the built-in ones.
        builtin: Whether to include ``BUILTIN_PATTERNS``.
    """

    def __init__(self, extra: list[RedactionPattern] | None = None, *, builtin: bool = True) -> None:
        self._builtin = [(k, _HINTS[k], re.compile(p)) for k, p in BUILTIN_PATTERNS.items()] if builtin else []
        self._builtin_ci = [(k, re.compile(p, re.IGNORECASE)) for k, p in BUILTIN_PATTERNS.items()] if builtin else []
        self._extra = [(p.name, re.compile(p.pattern)) for p in extra or []]

    def redact_text(self, text: str) -> tuple[str, list[str]]:
        """Redact one string.

        Returns:
            (redacted text, kinds of the matches in text order; empty when nothing matched).
        """
        spans: list[tuple[int, int, str]] = []
        lower = text.lower()
        if len(lower) == len(text):
            for kind, hints, rx in self._builtin:
                for hint in hints:
                    if hint in lower:
                        spans.extend((*_span(m), kind) for m in rx.finditer(lower))
                        break
        else:  # lower() changed lengths (rare Unicode): match case-insensitively on the original
            for kind, rx in self._builtin_ci:
                spans.extend((*_span(m), kind) for m in rx.finditer(text))
        for kind, rx in self._extra:
            spans.extend((m.start(), m.end(), kind) for m in rx.finditer(text))
        if not spans:
            return text, []
        out: list[str] = []
        kinds: list[str] = []
        pos = 0
        for start, end, kind in sorted(spans, key=lambda s: s[0]):
            if start < pos or end == start:
                continue  # overlaps an earlier match
            out.append(text[pos:start])
            out.append(f"[REDACTED:{kind}]")
            kinds.append(kind)
            pos = end
        out.append(text[pos:])
        return "".join(out), kinds

    def redact_request(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Redact message contents, text parts and tool-call arguments of a chat request.

        The input is not modified; untouched messages are shared, changed ones copied.

        Returns:
            (request to send upstream, kinds redacted).
        """
        found: list[str] = []
        messages = request.get("messages")
        if not isinstance(messages, list):
            return request, found
        out_messages = []
        for msg in messages:
            new = self._redact_message(msg, found) if isinstance(msg, dict) else msg
            out_messages.append(new)
        if not found:
            return request, found
        return {**request, "messages": out_messages}, found

    def _redact_message(self, msg: dict[str, Any], found: list[str]) -> dict[str, Any]:
        changed: dict[str, Any] = {}
        content = msg.get("content")
        if isinstance(content, str):
            text, kinds = self.redact_text(content)
            if kinds:
                found.extend(kinds)
                changed["content"] = text
        elif isinstance(content, list):
            parts, any_kind = [], False
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    text, kinds = self.redact_text(part["text"])
                    if kinds:
                        found.extend(kinds)
                        any_kind = True
                        part = {**part, "text": text}
                parts.append(part)
            if any_kind:
                changed["content"] = parts
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            new_calls, any_kind = [], False
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                    text, kinds = self._redact_arguments(fn["arguments"])
                    if kinds:
                        found.extend(kinds)
                        any_kind = True
                        call = {**call, "function": {**fn, "arguments": text}}
                new_calls.append(call)
            if any_kind:
                changed["tool_calls"] = new_calls
        return {**msg, **changed} if changed else msg

    def _redact_arguments(self, arguments: str) -> tuple[str, list[str]]:
        """Redact a tool call's JSON arguments leaf by leaf, so the result stays valid JSON."""
        try:
            value = json.loads(arguments)
        except ValueError:
            return self.redact_text(arguments)
        kinds: list[str] = []
        value = self._walk(value, kinds)
        return (json.dumps(value) if kinds else arguments), kinds

    def _walk(self, value: Any, kinds: list[str]) -> Any:
        if isinstance(value, str):
            text, found = self.redact_text(value)
            kinds.extend(found)
            return text
        if isinstance(value, list):
            return [self._walk(v, kinds) for v in value]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(v, str) and v and isinstance(k, str) and _SENSITIVE_KEY.search(k.lower()):
                    kinds.append("secret_field")
                    out[k] = "[REDACTED:secret_field]"
                else:
                    out[k] = self._walk(v, kinds)
            return out
        return value
