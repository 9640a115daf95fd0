"""Parse ``sacctmgr show qos`` (format id ``sacctmgr-qos-text``): the accounting database's QOS limits.

Three shapes, as sacctmgr prints them: the default fixed-width table (a header row and an underline of
``-`` runs; a value wider than its column is cut and ends in ``+``), ``-p`` (``|``-delimited with a
trailing ``|``) and ``-P`` (no trailing ``|``), each with any ``format=`` column list; ``-n`` (no header)
cannot be read — the columns would be unknown — and is a ParseError. Columns Warden does not use are
skipped. Real captures: tests/fixtures/sacctmgr-qos-text/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.errors import ParseError
from tools.models.slurm import SlurmQos
from tools.parsers.slurm._table import split_fixed, underline_spans
from tools.parsers.slurm._values import clean, parse_duration_s, parse_int, parse_tres

__all__ = ["parse_sacctmgr_qos_text"]

_FIELDS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "name": ("name", str),
    "priority": ("priority", parse_int),
    "flags": ("flags", lambda v: [f for f in v.split(",") if f]),
    "maxtres": ("max_tres_per_job", parse_tres),
    "maxtresperjob": ("max_tres_per_job", parse_tres),
    "maxtrespernode": ("max_tres_per_node", parse_tres),
    "maxtrespu": ("max_tres_per_user", parse_tres),
    "maxtresperuser": ("max_tres_per_user", parse_tres),
    "maxjobspu": ("max_jobs_per_user", parse_int),
    "maxjobsperuser": ("max_jobs_per_user", parse_int),
    "maxsubmitpu": ("max_submit_per_user", parse_int),
    "maxsubmitjobsperuser": ("max_submit_per_user", parse_int),
    "maxwall": ("max_wall_s", parse_duration_s),
    "maxwalldurationperjob": ("max_wall_s", parse_duration_s),
    "grptres": ("grp_tres", parse_tres),
    "grpjobs": ("grp_jobs", parse_int),
}
"""Header (lowercased) -> SlurmQos field and its value reader."""


def _rows(text: str, path: str) -> tuple[list[str], list[tuple[int, list[str]]], bool]:
    """(header names, numbered rows of cells, whether cells may be cut short)."""
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines:
        return [], [], False
    first_no, first = lines[0]
    if "|" in first:
        header = [h.strip() for h in first.rstrip("|").split("|")]
        rows = [(i, [c.strip() for c in ln.split("|")][: len(header)]) for i, ln in lines[1:]]
        return header, rows, False
    if len(lines) < 2 or (spans := underline_spans(lines[1][1])) is None:
        raise ParseError(path, first_no, "no header row with an underline and no '|' columns "
                                         "(sacctmgr -n output names no columns)")
    header = split_fixed(first, spans, first_no, path=path)
    return header, [(i, split_fixed(ln, spans, i, path=path)) for i, ln in lines[2:]], True


def parse_sacctmgr_qos_text(text: str, *, path: str) -> list[SlurmQos]:
    """One SlurmQos per row of ``sacctmgr show qos`` (any of its three shapes).

    Raises:
        ParseError: no Name column, no readable header, or a value that does not read (line named).
    """
    header, rows, cut = _rows(text, path)
    if not header:
        return []
    keys = [h.lower().replace(" ", "") for h in header]
    if "name" not in keys:
        raise ParseError(path, 1, f"no Name column in the header ({', '.join(header[:6])})")
    out: list[SlurmQos] = []
    for line_no, cells in rows:
        values: dict[str, Any] = {}
        truncated: list[str] = []
        for key, head, cell in zip(keys, header, cells):
            if key not in _FIELDS or clean(cell) is None:
                continue
            if cut and cell.endswith("+"):
                truncated.append(head)  # sacctmgr cut the value to its column: unknown, not a smaller limit
                continue
            field, read = _FIELDS[key]
            try:
                values[field] = read(cell)
            except ValueError as e:
                raise ParseError(path, line_no, f"column {head}: {e}") from None
        if "name" not in values:
            raise ParseError(path, line_no, "row without a QOS name")
        out.append(SlurmQos(**values, truncated=truncated))
    return out
