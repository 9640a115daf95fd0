"""Parser for ``kubectl get events`` tables (format k8s-events-text).

Layouts (kubectl aligns columns with a tab writer, so every cell starts under its header)::

    LAST SEEN           TYPE      REASON             OBJECT          MESSAGE
    10m (x15 over 80m)  Warning   FailedScheduling   pod/train-0     0/8 nodes are available: 8 Insufficient nvidia.com/gpu. ...
    NAMESPACE   LAST SEEN   TYPE   REASON   OBJECT   MESSAGE                                          # -A
    LAST SEEN   TYPE   REASON   OBJECT   SUBOBJECT   SOURCE   MESSAGE   FIRST SEEN   COUNT   NAME     # -o wide

``LAST SEEN`` is an age relative to the capture (``2m5s``, ``3h``, ``<unknown>``); with a count
above one kubectl appends ``(xN over AGE)``. Wide output gives SOURCE as ``component, host``.
Shapes: kubectl's event printer; see tests/fixtures/k8s-events-text/SOURCES.md.
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.k8s import K8sEvent

__all__ = ["parse_k8s_events_text"]

_COLUMNS = ("NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
            "FIRST SEEN", "COUNT", "NAME")
_REQUIRED = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
_AGE = re.compile(r"^(?:(\d{1,6})y)?(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,6})s)?$")
_INTERVAL = re.compile(r"^(\S+) \(x(\d{1,9}) over (\S+)\)$")
_UNITS = (365 * 86400, 86400, 3600, 60, 1)
_EMPTY = ("No resources found", "No events found")
_TEXT_MAX = 500


def _age_s(text: str) -> float | None:
    """``2m5s`` -> 125.0; ``<unknown>`` or ``<invalid>`` -> None."""
    m = _AGE.match(text)
    if not text or not m or not any(m.groups()):
        return None
    return float(sum(int(g) * u for g, u in zip(m.groups(), _UNITS) if g))


def _header(line: str) -> list[tuple[str, int]]:
    cols = []
    for name in _COLUMNS:
        for m in re.finditer(re.escape(name), line):
            start, end = m.start(), m.end()
            if (start == 0 or line[start - 1] == " ") and (end == len(line) or line[end] == " "):
                if not any(s <= start < s + len(n) for n, s in cols):  # "SEEN" inside "LAST SEEN" etc.
                    cols.append((name, start))
                    break
    cols.sort(key=lambda c: c[1])
    return cols


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


def _object(text: str) -> tuple[str | None, str | None]:
    """``pod/train-0`` -> (``Pod``, ``train-0``); ``node/gpu-3`` -> (``Node``, ``gpu-3``)."""
    kind, sep, name = text.partition("/")
    if not sep:
        return (text[:1].upper() + text[1:]) or None, None
    return kind[:1].upper() + kind[1:], name or None


def parse_k8s_events_text(text: str, *, path: str) -> list[K8sEvent]:
    """Parse ``kubectl get events`` (optionally ``-A`` and/or ``-o wide``) output.

    Args:
        text: the table as printed; ``No resources found ...`` alone means no events.
        path: snapshot-relative path; kept in each event's ``file`` with its 1-based ``line``.

    Returns:
        One K8sEvent per row. ``last_seen_s`` / ``first_seen_s`` are ages in seconds before the
        capture (None when kubectl printed ``<unknown>``); ``last_timestamp`` stays None because a
        table carries no absolute time. Object kinds are capitalised (``pod`` -> ``Pod``).

    Raises:
        ParseError: naming path and line when the header lacks LAST SEEN/TYPE/REASON/OBJECT/MESSAGE,
            a row does not line up with the header, or an age, count or type is malformed.
    """
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        return []
    if lines[first].strip().startswith(_EMPTY):
        return []
    cols = _header(lines[first])
    names = [c for c, _ in cols]
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise ParseError(path, first + 1, f"not a kubectl get events header (missing {', '.join(missing)})")
    events: list[K8sEvent] = []
    for idx in range(first + 1, len(lines)):
        line = lines[idx]
        if not line.strip():
            continue
        if len(line) < cols[-1][1]:
            raise ParseError(path, idx + 1, f"row ends before the {cols[-1][0]} column (truncated?)")
        cells: dict[str, str] = {}
        for j, (name, start) in enumerate(cols):
            end = cols[j + 1][1] if j + 1 < len(cols) else None
            if start > 0 and len(line) > start and line[start - 1] != " ":
                raise ParseError(path, idx + 1, f"row does not line up with the header at column {name}")
            cells[name] = (line[start:end] if end is not None else line[start:]).strip()
        events.append(_row(cells, path=path, line=idx + 1))
    return events


def _row(cells: dict[str, str], *, path: str, line: int) -> K8sEvent:
    seen, count, first_s = cells["LAST SEEN"], 1, None
    m = _INTERVAL.match(seen)
    if m:
        seen, count, first_s = m.group(1), int(m.group(2)), _age_s(m.group(3))
    last_s = _age_s(seen)
    if last_s is None and not seen.startswith("<"):
        raise ParseError(path, line, f"LAST SEEN {seen[:40]!r} is not an age")
    if cells.get("FIRST SEEN"):
        first_s = _age_s(cells["FIRST SEEN"])
    if cells.get("COUNT"):
        if not cells["COUNT"].isdigit() or len(cells["COUNT"]) > 9:
            raise ParseError(path, line, f"COUNT {cells['COUNT'][:40]!r} is not a number")
        count = int(cells["COUNT"])
    etype = cells["TYPE"]
    if etype and not re.fullmatch(r"[A-Za-z]{1,20}", etype):
        raise ParseError(path, line, f"TYPE {etype[:40]!r} is not an event type")
    kind, name = _object(cells["OBJECT"][:300])
    component, _, host = cells.get("SOURCE", "").partition(",")
    namespace = cells.get("NAMESPACE") or None
    return K8sEvent(
        namespace=namespace, name=cells.get("NAME") or None, file=path, line=line, object_kind=kind,
        object_name=name, object_namespace=namespace if kind != "Node" else None,
        field_path=cells.get("SUBOBJECT") or None, type=etype or None, reason=cells["REASON"][:120] or None,
        message=_clip(cells["MESSAGE"]), count=max(count, 1), last_seen_s=last_s, first_seen_s=first_s,
        source_component=component.strip()[:120] or None, source_host=host.strip()[:253] or None,
    )
