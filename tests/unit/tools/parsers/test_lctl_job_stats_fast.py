"""The job_stats fast path (lctl_job_stats._plain_items) builds what libyaml's BaseLoader builds, or declines:
on every recorded job_stats file, on a generated 2,000-job MDS, and on seeded variants that put YAML's
odd corners (quotes, comments, anchors, tags, colons, blank lines, other indentation) where the fast
path reads."""

from __future__ import annotations

import random

import pytest
import yaml

from tests.unit.tools.parsers._corpus import files_of
from tools.parsers.lustre.lctl_job_stats import _LOADER, _plain_items, parse_lctl_job_stats

_ENTRY = ["- job_id:          {job}", "  snapshot_time:   1795953599.640504122 secs.nsecs",
          "  elapsed_time:    300.000000000 secs.nsecs",
          "  open:            {{ samples:        2958, unit: usecs, min:        1, max:     1000, sum:   73950 }}",
          "  write_bytes:     {{ samples:   25, unit: bytes, min: 1048576, max: 16777216, sum: 26214400 }}"]


def _yaml_items(lines: list[str]) -> object:
    try:
        doc = yaml.load("\n".join(lines), Loader=_LOADER)  # noqa: S506 - BaseLoader builds only str/list/dict
    except yaml.YAMLError:
        return "invalid"
    return doc.get("job_stats") if isinstance(doc, dict) else "not a mapping"


def _blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if ".job_stats=" in line:
            rest = line.split(".job_stats=", 1)[1].strip()
            blocks.append([rest] if rest else [])
        elif blocks:
            blocks[-1].append(line)
    return blocks


@pytest.mark.parametrize("path,text", files_of("lctl-job-stats"), ids=lambda v: v if "/" in str(v) else "")
def test_recorded_files_read_as_yaml_reads_them(path: str, text: str) -> None:
    for lines in _blocks(text):
        items = _plain_items(lines)
        if items is not None:
            assert items == _yaml_items(lines), path


def test_the_usual_shape_takes_the_fast_path_and_parses_the_same() -> None:
    lines = ["job_stats:"] + [line.format(job=4100000 + i) for i in range(2000) for line in _ENTRY] + [""]
    items = _plain_items(lines)
    assert items is not None and len(items) == 2000
    assert items == _yaml_items(lines)
    entries = parse_lctl_job_stats("mdt.scratch-MDT0000.job_stats=\n" + "\n".join(lines), path="js.txt")
    assert entries[1].job_id == "4100001" and entries[1].ops["open"] == 2958 and entries[1].usecs["open"] == 73950
    assert entries[1].bytes["write_bytes"] == 26214400 and entries[1].elapsed_s == 300.0


_ODD = ["'q'", '"q"', "#c", " #c", "&a", "*a", "!t", "~", "a:", "a:b", ": ", "-", "- ", "?", "|", ">", "{", "}",
        "[", "]", ",", "\t", "  ", "", "1e3", "0x1f", "null", "yes", "...", "---", "%", "@", "`"]


def test_seeded_variants_never_differ_from_yaml() -> None:
    rnd = random.Random(10)
    fast = 0
    for _ in range(3000):
        lines = ["job_stats:"] + [line.format(job=rnd.choice(["7", "dd.0", "a:b:c"])) for line in _ENTRY]
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(1, len(lines))
            at = rnd.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rnd.choice(_ODD) + lines[i][at:]
        items = _plain_items(lines)
        if items is not None:
            fast += 1
            assert items == _yaml_items(lines), lines
    assert fast > 100  # the variants do reach the fast path (harmless insertions: spaces, words)
