"""scontrol key=value records read a record at a time (tools/parsers/slurm/_keyvalue.py ``_plain_record``) are
those of reading them line by line: on every recorded ``scontrol show job|node`` file in the project, on a
generated large cluster, and on odd shapes (free text with blanks, keys twice, counters, cut lines, job names
holding newlines, blank lines inside a node record, other line breaks) — the same records or the same error."""

from __future__ import annotations

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.errors import ParseError
from tools.parsers.slurm import _keyvalue
from tools.parsers.slurm._keyvalue import read_records
from tools.parsers.slurm.scontrol_job_text import _REST_OF_LINE as JOB_REST
from tools.parsers.slurm.scontrol_node_text import _REST_OF_LINE as NODE_REST

CORPUS = [(p, t, "JobId", JOB_REST) for p, t in files_of("scontrol-job-text")] + \
         [(p, t, "NodeName", NODE_REST) for p, t in files_of("scontrol-node-text")]


def _read(text: str, first: str, rest: frozenset[str], fast: bool) -> object:
    try:
        return [(r.line_no, list(r.values.items())) for r in read_records(text, path="x", first_key=first,
                                                                        rest_of_line=rest, fast=fast)]
    except ParseError as e:
        return f"ParseError: {e}"


def _same(text: str, first: str = "JobId", rest: frozenset[str] = JOB_REST) -> None:
    slow = _read(text, first, rest, fast=False)
    _keyvalue._good_keys.clear()  # also with no key seen before
    assert _read(text, first, rest, fast=True) == slow
    assert _read(text, first, rest, fast=True) == slow  # and with every key seen


def test_corpus_holds_the_projects_files() -> None:
    assert len(CORPUS) >= 10


@pytest.mark.parametrize("path,text,first,rest", CORPUS, ids=[p for p, *_ in CORPUS])
def test_recorded_files_read_alike(path: str, text: str, first: str, rest: frozenset[str]) -> None:
    _same(text, first, rest)


def test_generated_cluster_reads_alike(tmp_path) -> None:
    from sandbox.scale import ScaleSpec, generate

    gen = generate(ScaleSpec(nodes=40, jobs=300, fault="xid79", seed=3, variant="text"), tmp_path)
    root = gen.path / "snapshot" / "slurm"
    jobs = (root / "scontrol_show_job.txt").read_text()
    _same(jobs)
    chunks = [c.strip("\n") for c in jobs.split("\n\n") if c.strip()]
    taken = [c for c in chunks if _keyvalue._plain_record(c, "JobId=", JOB_REST) is not None]
    assert len(taken) >= 0.9 * len(chunks)  # the usual shape is read a record at a time
    _same((root / "scontrol_show_node.txt").read_text(), "NodeName", NODE_REST)


_JOB = "JobId=7 JobName=train\n   UserId=a(1) JobState=RUNNING Reason=None\n   NodeList=gpu01\n   WorkDir=/w\n"
ODD = {
    "plain": _JOB + "\n" + _JOB.replace("7", "8"),
    "name_with_blanks": _JOB.replace("JobName=train", "JobName=my train; rm -rf ~") + "\n" + _JOB,
    "free_text_not_last": _JOB.replace("   WorkDir=/w", "   WorkDir=/w StdOut=/o") + "\n" + _JOB,
    "free_text_key_inside_a_value": _JOB.replace("Reason=None", "Reason=xWorkDir=/z") + "\n" + _JOB,
    "key_twice": _JOB + "   JobState=FAILED\n\n" + _JOB,
    "counter_word": _JOB + "   NtasksPerTRES:0\n\n" + _JOB,
    "bad_key": _JOB + "   9Bad=1\n\n" + _JOB,
    "cut_line": _JOB + "   Partition\n",
    "name_holding_newline": "JobId=7 JobName=x\nJobId=9 y\n   JobState=RUNNING\n\n" + _JOB,
    "unindented_line": _JOB + "Partition=gpu\n",
    "three_blank_lines": _JOB + "\n\n\n" + _JOB,
    "blank_lines_first": "\n\n" + _JOB,
    "whitespace_line_between": _JOB + "   \n" + _JOB,
    "no_blank_between": _JOB + _JOB.replace("7", "9"),
    "text_outside": "garbage\n\n" + _JOB,
    "crlf": _JOB.replace("\n", "\r\n") + "\r\n" + _JOB.replace("\n", "\r\n"),
    "form_feed": _JOB.replace("   NodeList", "\x0c   NodeList"),
    "tab_indent": _JOB.replace("   ", "\t"),
    "trailing_blanks": _JOB.replace("/w\n", "/w   \n") + "\n" + _JOB,
    "empty_value": _JOB.replace("Reason=None", "Reason=") + "\n" + _JOB,
    "value_with_equals": _JOB.replace("WorkDir=/w", "WorkDir=/a=b") + "\n" + _JOB,
}
_NODE = "NodeName=gpu01 Arch=x86_64\n   State=IDLE Reason=Not responding [slurm@2026-01-01T00:00:00]\n   OS=Linux 5.15\n"
ODD_NODES = {
    "node_reason_with_blanks": _NODE + "\n" + _NODE.replace("gpu01", "gpu02"),
    "blank_line_inside_a_node": "NodeName=gpu01 Arch=x86_64\n   State=IDLE\n\n   RealMemory=10\n\n" + _NODE,
    "plain_nodes": "NodeName=gpu01 Arch=x86_64\n   State=IDLE\n\nNodeName=gpu02 Arch=x86_64\n   State=IDLE\n",
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_job_records_read_alike(name: str) -> None:
    _same(ODD[name])


@pytest.mark.parametrize("name", sorted(ODD_NODES))
def test_odd_node_records_read_alike(name: str) -> None:
    _same(ODD_NODES[name], "NodeName", NODE_REST)
