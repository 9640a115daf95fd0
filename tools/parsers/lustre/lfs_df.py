"""Parsers for `lfs df` (format lfs-df) and `lfs df -i` (format lfs-df-inodes).

Shape::

    UUID                   1K-blocks        Used   Available Use% Mounted on
    lustre-MDT0000_UUID      2210560       38080     1970816   2% /mnt/lustre[MDT:0]
    lustre-OST0000_UUID      3771392       36864     3503104   1% /mnt/lustre[OST:0]
    OST0002             : inactive device
    lustre-OST0003_UUID      3771392     3700000       71392  99% /mnt/lustre[OST:3]

    filesystem_summary:      7542784     3736864     3574496  51% /mnt/lustre

``lfs df -i`` has the header ``UUID  Inodes  IUsed  IFree IUse% Mounted on``; ``-h`` prints sizes
such as ``3.6G`` (powers of 1024). A UUID too long for its column is printed on a line of its
own with the numbers on the next line. Summary rows are skipped; rows for unreachable targets
(``: inactive device``, ``: Resource temporarily unavailable``) are kept with their status.
Real shapes: Lustre manual ("lfs df"), IO500 issue threads (see tests/fixtures/lfs-df/SOURCES.md).
"""

from __future__ import annotations

import re

from tools.errors import ParseError
from tools.models.lustre import LfsDfRow

__all__ = ["parse_lfs_df", "parse_lfs_df_inodes"]

_MOUNT = re.compile(r"^(?P<mount>.*)\[(?P<kind>MDT|OST):(?P<index>\d{1,8})\]$")
_UUID = re.compile(r"^(?:(?P<fs>[\w.]+)-)?(?P<kind>MDT|OST)(?P<index>[0-9a-fA-F]{4,8})(?:_UUID)?$")
_STATUS = re.compile(r"^(?P<name>\S+)\s*:\s+(?P<status>\D.*)$")
_HUMAN = re.compile(r"^(?P<num>\d{1,24}(?:\.\d{1,6})?)(?P<unit>[BKMGTPE]?)$")
_POWER = {"B": -1, "": 0, "K": 0, "M": 1, "G": 2, "T": 3, "P": 4, "E": 5}


def _count(token: str, *, path: str, line: int) -> int:
    """An integer column, or a `-h` human size converted to KiB (blocks) / units (inodes)."""
    if token.isdigit() and len(token) <= 24:
        return int(token)
    m = _HUMAN.match(token)
    if not m:
        raise ParseError(path, line, f"not a number: {token[:40]!r}")
    return int(round(float(m["num"]) * 1024 ** _POWER[m["unit"]]))


def _identity(uuid: str, mount: str) -> tuple[str, int, str | None, str]:
    """(kind, index, fs, mount point) from the mount column, falling back to the uuid."""
    fs = None
    u = _UUID.match(uuid)
    if u:
        fs = u["fs"]
    m = _MOUNT.match(mount)
    if m:
        return m["kind"], int(m["index"]), fs, m["mount"]
    if u:
        return u["kind"], int(u["index"], 16), fs, mount
    return "", -1, fs, mount


def _name_bare_rows(rows: list[LfsDfRow], blocks: list[int]) -> None:
    """Give a row lfs printed without its file system (``OST000b : Resource temporarily unavailable``) the file
    system and mount point of the other rows of its block, when they agree on one."""
    for i, r in enumerate(rows):
        if r.fs:
            continue
        mates = {(o.fs, o.mount) for o, b in zip(rows, blocks) if b == blocks[i] and o.fs}
        if len(mates) == 1:
            r.fs, r.mount = next(iter(mates))


def _parse(text: str, *, path: str, inodes: bool) -> list[LfsDfRow]:
    rows: list[LfsDfRow] = []
    blocks: list[int] = []  # per row: which file system's block (each ends at its filesystem_summary)
    block = 0
    pending_uuid: tuple[str, int] | None = None
    saw_header = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        tokens = line.split()
        if tokens[0] == "UUID":
            saw_header = True
            is_inodes = len(tokens) > 1 and tokens[1] == "Inodes"
            if is_inodes != inodes:
                want = "lfs df -i" if inodes else "lfs df"
                raise ParseError(path, lineno, f"header is not {want} output: {line[:80]!r}")
            continue
        if tokens[0].startswith("filesystem_summary:") or tokens[0].startswith("filesystem summary"):
            pending_uuid = None
            block += 1
            continue
        status = _STATUS.match(line)
        if status:
            name = status["name"]
            kind, index, fs, _ = _identity(name, "")
            rows.append(
                LfsDfRow(file=path, uuid=name, kind=kind, index=index, total=0, used=0, available=0, use_pct=0.0,
                         mount="", inodes=inodes, fs=fs, status=status["status"].strip()[:200])
            )
            blocks.append(block)
            continue
        if len(tokens) == 1 and pending_uuid is None:
            pending_uuid = (tokens[0], lineno)  # long UUID: numbers follow on the next line
            continue
        if pending_uuid is not None:
            uuid, first_line = pending_uuid
            values = tokens
            pending_uuid = None
        else:
            uuid, first_line, values = tokens[0], lineno, tokens[1:]
        if len(values) < 5:
            raise ParseError(path, lineno, f"row has {len(values) + 1} columns, expected at least 6: {line[:120]!r}")
        total, used, avail = (_count(v, path=path, line=lineno) for v in values[:3])
        pct = values[3].rstrip("%")
        try:
            use_pct = float(pct) if pct != "-" else 0.0
        except ValueError:
            raise ParseError(path, lineno, f"not a percentage: {values[3][:20]!r}") from None
        if "[" in values[4] and not _MOUNT.match(values[4]):
            raise ParseError(path, lineno, f"mount column is cut short: {values[4][:80]!r}")
        kind, index, fs, mount = _identity(uuid, values[4])
        if not kind:
            raise ParseError(path, first_line, f"cannot tell MDT/OST and index of {uuid[:80]!r}")
        rows.append(
            LfsDfRow(file=path, uuid=uuid, kind=kind, index=index, total=total, used=used, available=avail, use_pct=use_pct,
                     mount=mount, inodes=inodes, fs=fs, flags=" ".join(values[5:]) or None)
        )
        blocks.append(block)
    _name_bare_rows(rows, blocks)
    if pending_uuid is not None:
        raise ParseError(path, pending_uuid[1], f"row for {pending_uuid[0][:80]!r} has no numbers (truncated?)")
    if not saw_header and not rows:
        raise ParseError(path, None, "no lfs df header or rows found")
    return rows


def parse_lfs_df(text: str, *, path: str) -> list[LfsDfRow]:
    """Parse `lfs df` / `lfs df -h` (format lfs-df).

    Returns one LfsDfRow per MDT/OST row (summary rows skipped); total/used/available in KiB,
    use_pct in percent; inactive or unreachable targets have ``status`` set and zero counts.

    Raises:
        ParseError: naming path and line for a row with too few columns or a non-numeric value,
            or when the header is that of `lfs df -i`.
    """
    return _parse(text, path=path, inodes=False)


def parse_lfs_df_inodes(text: str, *, path: str) -> list[LfsDfRow]:
    """Parse `lfs df -i` (format lfs-df-inodes).

    Returns one LfsDfRow per MDT/OST row with ``inodes=True``: total/used/available are inode
    counts, use_pct the IUse% column.

    Raises:
        ParseError: naming path and line for a row with too few columns or a non-numeric value,
            or when the header is that of plain `lfs df`.
    """
    return _parse(text, path=path, inodes=True)
