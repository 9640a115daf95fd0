"""Test helper: every recorded file of one format in the project: tests/fixtures/<format>/ and the files
the bundled and blind incidents' snapshot manifests list with that format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]


def _manifests() -> Iterator[Path]:
    yield from sorted(ROOT.glob("evals/incidents/*/snapshot/manifest.yaml"))
    yield from sorted(ROOT.glob("evals/blind/*/*/snapshot/manifest.yaml"))


def files_of(fmt: str) -> list[tuple[str, str]]:
    """(path relative to the repository, text) of every file of format ``fmt``; bytes that are not
    UTF-8 are replaced, as the parsers' callers do."""
    out: list[tuple[str, str]] = []
    fixtures = ROOT / "tests" / "fixtures" / fmt
    paths = [p for p in sorted(fixtures.glob("*")) if p.is_file() and p.suffix != ".md"] if fixtures.is_dir() else []
    for manifest in _manifests():
        data = yaml.load(manifest.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        for entry in data.get("files") or []:
            if entry.get("format") == fmt and (manifest.parent / entry["path"]).is_file():
                paths.append(manifest.parent / entry["path"])
    for p in paths:
        out.append((str(p.relative_to(ROOT)), p.read_bytes().decode("utf-8", "replace")))
    return out
