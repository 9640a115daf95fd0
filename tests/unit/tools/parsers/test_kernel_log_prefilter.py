"""The kernel-log line prefilter (tools/parsers/kernel/_prefilter.py) changes no result: every recorded
kernel log in the project, and hostile shapes, parse to the same events with it and without it."""

from __future__ import annotations

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.parsers.kernel._prefilter import candidate_lines
from tools.parsers.kernel.kernel_log import MAX_GENERIC, parse_kernel_log

CORPUS = files_of("kernel-log")


def _both(text: str, path: str = "kernel/n1.log") -> tuple[list[dict], list[dict]]:
    fast = [e.model_dump() for e in parse_kernel_log(text, path=path, node="n1")]
    slow = [e.model_dump() for e in parse_kernel_log(text, path=path, node="n1", prefilter=False)]
    return fast, slow


def test_corpus_is_the_projects_kernel_logs() -> None:
    assert len(CORPUS) >= 100  # fixtures plus the bundled and blind incidents' kernel logs
    assert sum(1 for _, text in CORPUS if candidate_lines(text) is not None) >= 90  # the filter is used


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_same_events_with_and_without_prefilter(path: str, text: str) -> None:
    fast, slow = _both(text, path)
    assert fast == slow


HOSTILE = {
    "fallen_off_bus_with_plain_continuation": (
        "[  12.5] NVRM: The NVIDIA GPU 0000:3b:00.0\n"
        "[  12.5]       (PCI ID: 10de:2330) installed in this system has\n"
        "[  12.5]       fallen off the bus and is not responding to commands.\n"
        "[  13.0] random line after\n"),
    "group_closed_by_a_plain_line": (
        "[  12.5] NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2330)\n"
        "[  12.6] zzz quiet line\n"
        "[  12.7] NVRM: GPU at PCI:0000:3b:00: has fallen off the bus.\n"),
    "printed_priority_only": "kern  :err   : [ 5.1] some message with no word\nkern  :info  : [ 5.2] plain\n",
    "rfc5424_priority_only": "<11>1 2026-03-04T10:01:02Z gpu017 mything 1234 - - plain words\n",
    "gpfs_tags": "2026-03-04_10:01:02.123+0100: [E] something odd\n2026-03-04_10:01:03.123+0100: [I] Expelling\n",
    "non_ascii_kelvin_and_long_s": "[ 1.0] \u212aILL \u017fegfault in worker\n[ 2.0] plain\n",
    "carriage_returns": "[ 1.0] plain\r[ 2.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x\r\n[ 3.0] error here\n",
    "form_feed_and_vertical_tab": "[ 1.0] plain\x0c[ 2.0] segfault\x0b[ 3.0] nothing\n",
    "generic_flood": "".join(f"[ {i}.0] io error {i}\n" for i in range(MAX_GENERIC + 20)),
    "oom_pair": ("[ 9.0] oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/slurm/uid_1/job_42/step_0,task=python,pid=77,uid=1\n"
                 "[ 9.0] quiet\n"
                 "[ 9.1] Memory cgroup out of memory: Killed process 77 (python) total-vm:1kB, anon-rss:2kB\n"),
    "no_trailing_newline": "[ 1.0] plain\n[ 2.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x",
    "slurm_tag_only": "Mar 04 10:01:02 gpu017 slurmstepd[99]: *** JOB 42 ON gpu017 CANCELLED AT 2026 ***\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_same_events_on_hostile_shapes(name: str) -> None:
    fast, slow = _both(HOSTILE[name])
    assert fast == slow


def test_lines_without_any_keyword_are_not_candidates() -> None:
    text = "[ 1.0] Command line: BOOT_IMAGE=/boot/vmlinuz\n[ 2.0] NVRM: loading\n[ 3.0] DMI: board\n"
    assert candidate_lines(text) == {2}
    assert candidate_lines("\u212a\n") is None and candidate_lines("a\rb") is None


# The per-line reading of candidate_lines (timestamp cut off, the rest memoised) against one search over the text.
from tools.parsers.kernel._prefilter import KEYWORDS, _GPFS_TAGS, _STAMP, candidate_lines_reference  # noqa: E402

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_STAMPS = [f"[{d} {m} {dd} 10:01:02{frac} 2026]{sp}" for d in _DAYS for m in _MONTHS for dd in (" 4", "14")
           for frac in ("", ".123") for sp in ("", " ")] + ["[ 1843.308145]", "[1.5] ", "[\t 7.0]", "[    0.000000] "]


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_candidate_lines_equal_one_search_over_the_text(path: str, text: str) -> None:
    assert candidate_lines(text) == candidate_lines_reference(text)


def test_no_keyword_lies_in_or_starts_in_a_timestamp() -> None:
    """What lets candidate_lines search only the text after a timestamp: a keyword found in the whole line is
    then always found in that rest."""
    words = KEYWORDS + _GPFS_TAGS
    for stamp in _STAMPS:
        assert _STAMP.match(stamp) and _STAMP.match(stamp).end() == len(stamp), stamp
        for word in words:
            assert word not in stamp, (word, stamp)
            for cut in range(1, len(word)):
                assert not stamp.endswith(word[:cut]), (word, stamp)


@pytest.mark.parametrize("stamp", _STAMPS[::7])
def test_stamped_lines_hold_keywords_as_the_reference_finds(stamp: str) -> None:
    lines = [stamp + w for w in KEYWORDS[::3]] + [stamp + "quiet line", stamp, stamp + "e] x", "[err err  2 1:01:02 2026] x",
                                                  stamp.upper() + "quiet", "<3>" + stamp + "x"]
    text = "\n".join(lines) + "\n"
    assert candidate_lines(text) == candidate_lines_reference(text)
    assert candidate_lines(text) == candidate_lines(text)  # memoised the second time: the same
