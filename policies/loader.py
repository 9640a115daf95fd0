"""Read Cedar policy files and the schema, and refuse anything that is not exactly right.

Cedar (through cedarpy) reports a syntax error without its position, so this module finds the
line itself: it splits a file into policy statements (top-level ``;`` outside strings and ``//``
comments), parses each on its own, and within the first failing statement parses growing
prefixes line by line; the first prefix whose error is not "unexpected end of input" ends on
the offending line. Errors that Cedar raises only for a complete policy (an unknown function,
``=`` for ``==``) are reported at the policy's last line.

Every policy must carry an ``@id("...")`` annotation, unique across all files; it is the id a
decision reports. An optional ``@reason("...")`` is the sentence ``explain`` prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cedarpy

from policies.errors import PolicyParseError, PolicyValidationError, SchemaError

__all__ = ["LoadedPolicy", "PolicyBundle", "load_bundle", "load_schema", "expand_policy_paths"]

_EOF_MESSAGE = "unexpected end of input"


@dataclass(frozen=True)
class LoadedPolicy:
    """One policy as loaded: its ``@id``, ``@reason``, effect and where it is written."""

    policy_id: str
    reason: str
    effect: Literal["permit", "forbid"]
    path: str
    line: int


@dataclass(frozen=True)
class PolicyBundle:
    """Everything the engine needs: the parsed policy set, the schema and the policy index."""

    policy_set: cedarpy.PolicySet
    schema: cedarpy.Schema
    policies: dict[str, LoadedPolicy]
    paths: list[Path]


@dataclass(frozen=True)
class _Statement:
    start: int  # offset of the first character that is not blank or comment
    end: int  # offset just past the terminating ';' (or end of text)
    line: int  # 1-based line of `start`


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _split_statements(text: str) -> list[_Statement]:
    """Split Cedar policy text at top-level semicolons, skipping strings and // comments."""
    statements: list[_Statement] = []
    start: int | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if start is None and not ch.isspace():
            start = i
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch == ";" and start is not None:
            statements.append(_Statement(start, i + 1, _line_of(text, start)))
            start = None
        i += 1
    if start is not None:
        statements.append(_Statement(start, n, _line_of(text, start)))
    return statements


def _parse_error(text: str) -> str | None:
    """Cedar's parse error for `text`, or None when it parses."""
    try:
        cedarpy.PolicySet.from_str(text)
    except ValueError as exc:
        return str(exc)
    return None


def _locate_parse_error(text: str) -> tuple[int | None, str | None]:
    """Return (line, message) of the first statement that fails to parse on its own."""
    for stmt in _split_statements(text):
        body = text[stmt.start : stmt.end]
        message = _parse_error(body)
        if message is None:
            continue
        offset = stmt.start
        while True:
            newline = text.find("\n", offset, stmt.end)
            if newline < 0:
                last = _line_of(text, stmt.end - 1)
                if last != stmt.line:
                    message = f"{message} (in the policy starting at line {stmt.line})"
                return last, message
            prefix_error = _parse_error(text[stmt.start : newline])
            if prefix_error is not None and prefix_error != _EOF_MESSAGE:
                return _line_of(text, newline), prefix_error
            offset = newline + 1
    return None, None


def load_schema(path: Path) -> cedarpy.Schema:
    """Parse a Cedar schema file in the human-readable schema syntax.

    Raises:
        SchemaError: naming the file when it cannot be read or does not parse.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(str(path), None, f"cannot read schema: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SchemaError(str(path), None, "schema is not UTF-8 text") from exc
    try:
        return cedarpy.Schema.from_str(text)
    except ValueError as exc:
        raise SchemaError(str(path), None, f"invalid Cedar schema: {exc}") from exc


def expand_policy_paths(paths: list[Path]) -> list[Path]:
    """Expand directories to their ``*.cedar`` files (sorted); keep files as given.

    Raises:
        PolicyValidationError: when no policy file results (an empty policy set would deny
            everything silently, which is never what a site meant).
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.glob("*.cedar")))
        else:
            files.append(path)
    if not files:
        shown = ", ".join(str(p) for p in paths) or "(none)"
        raise PolicyValidationError(shown, None, "no Cedar policy files found")
    return files


def _load_file(path: Path, schema: cedarpy.Schema) -> tuple[str, list[LoadedPolicy]]:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyParseError(where, None, f"cannot read policy file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        line = _line_of(exc.object.decode("latin-1"), exc.start)
        raise PolicyParseError(where, line, "policy file is not UTF-8 text") from exc
    if _parse_error(text) is not None:
        line, message = _locate_parse_error(text)
        raise PolicyParseError(where, line, f"Cedar syntax error: {message or _parse_error(text)}")

    statements = _split_statements(text)

    def line_of_policy(cedar_id: str) -> int | None:
        index = int(cedar_id.removeprefix("policy")) if cedar_id.startswith("policy") else -1
        return statements[index].line if 0 <= index < len(statements) else None

    est = json.loads(cedarpy.policies_to_json_str(text))
    for cedar_id in est.get("templates", {}):
        raise PolicyValidationError(where, line_of_policy(cedar_id), "policy templates are not supported")
    result = cedarpy.validate_policies(text, schema)
    if not result.validation_passed:
        first = result.errors[0]
        name = result.id_annotations_by_policy_id.get(first.policy_id) or first.policy_id
        detail = first.error.replace(f"for policy `{first.policy_id}`, ", "")
        raise PolicyValidationError(
            where, line_of_policy(first.policy_id), f"policy {name!r} fails the schema: {detail}"
        )

    loaded: list[LoadedPolicy] = []
    for cedar_id, body in est.get("staticPolicies", {}).items():
        annotations = body.get("annotations") or {}
        policy_id = annotations.get("id") or ""
        line = line_of_policy(cedar_id) or 1
        if not policy_id:
            raise PolicyValidationError(where, line, 'policy has no @id("...") annotation')
        loaded.append(LoadedPolicy(policy_id, annotations.get("reason") or "", body["effect"], where, line))
    return text, loaded


def load_bundle(paths: list[Path], schema_path: Path) -> PolicyBundle:
    """Load, check and combine policy files into one policy set.

    Args:
        paths: Cedar policy files, or directories whose ``*.cedar`` files are loaded.
        schema_path: the Cedar schema every policy is type-checked against.

    Raises:
        SchemaError: the schema cannot be read or parsed.
        PolicyParseError: a file cannot be read or is not valid Cedar (file and line named).
        PolicyValidationError: a policy fails the schema, lacks an @id, repeats an @id, or is
            a template; or no policy file was found.
    """
    schema = load_schema(schema_path)
    files = expand_policy_paths([Path(p) for p in paths])
    policy_set: cedarpy.PolicySet | None = None
    index: dict[str, LoadedPolicy] = {}
    for path in files:
        text, loaded = _load_file(path, schema)
        for policy in loaded:
            previous = index.get(policy.policy_id)
            if previous is not None:
                raise PolicyValidationError(
                    policy.path,
                    policy.line,
                    f"@id {policy.policy_id!r} already used at {previous.path}:{previous.line}",
                )
            index[policy.policy_id] = policy
        policy_set = cedarpy.PolicySet.from_str(text) if policy_set is None else policy_set.with_added_str(text)
    if policy_set is None:  # unreachable: expand_policy_paths never returns an empty list
        raise PolicyValidationError(str(schema_path), None, "no policies loaded")
    return PolicyBundle(policy_set=policy_set, schema=schema, policies=index, paths=files)
