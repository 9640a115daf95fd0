"""The kernel-log prefix reader's fast paths (tools/parsers/kernel/_prefix.py) change no result: every line of
every recorded kernel log in the project, and hostile shapes, split exactly as the reference reader splits them."""

from __future__ import annotations

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.parsers.kernel._prefix import split_prefix, split_prefix_reference

CORPUS = files_of("kernel-log")

ODD = [
    "", " ", "\t  NVRM: continued", "[", "[]", "[ 12.5]", "[ 12.5]msg", "[ 12.5]  [E] gpfs-looking", "[ 1.0] [X] crit tag",
    "[Mon Mar  4 10:01:02 2026] [W] warned", "[Mon Mar  4 10:01:02 2026]", "[Mon Mar  4 10:01:02.123 2026] x",
    "[Mon Mar 4 10:01:02 2026] one-digit day", "kern  :err   : [ 5.1] x", "kern  :warn  : [Mon Mar  4 10:01:02 2026] y",
    "user  :info  : [  1.0]", "<11>1 2026-03-04T10:01:02Z gpu017 mmfs 1234 - - [E] msg", "<6>[ 1.0] with pri",
    "<3>kern  :err   : [ 1.0] both", "<999>1 x y z w v - msg", "<11>1 2026-03-04T10:01:02Z h t p [a b] structured",
    "Mar 04 10:01:02 gpu017 kernel: [ 12.0] NVRM: Xid", "Mar 04 10:01:02 gpu017 slurmd[12]: error: x",
    "2026-03-04T10:01:02+0000 gpu017 kernel: msg", "2026-03-04_10:01:02.123+0100: [E] msg",
    "Mon Mar  4 10:01:02.123 2026: [I] msg", "\u0663\u0660\u0662\u0666-03-04T10:01:02Z h kernel: arabic digits",
    "\u212aern  :err   : [ 1.0] kelvin", "[\u0661.\u0662] unicode digits in brackets", "[ \t1.5] tab",
]


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_every_recorded_line_splits_as_the_reference(path: str, text: str) -> None:
    for line in text.splitlines():
        assert split_prefix(line[:4096]) == split_prefix_reference(line[:4096]), line


@pytest.mark.parametrize("line", ODD)
def test_odd_lines_split_as_the_reference(line: str) -> None:
    assert split_prefix(line) == split_prefix_reference(line)
