"""tools.read.subject_job: a named job's nodes whose exporter is down, and how long its log is silent."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from tools.facts import build_facts
from tools.read.subject_job import silent_minutes, unread_nodes
from tools.sources.base import RawArtifact

NOW = datetime(2026, 5, 12, 11, 16, tzinfo=timezone.utc)
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             77310       gpu ul2-t5x     mhan  R    2:10:00      4 b[01-04]
"""
UP = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"__name__": "up", "instance": f"{h}:9400", "job": "dcgm"}, "value": [1778584560, v]}
    for h, v in (("b01", "1"), ("b02", "1"), ("b03", "0"), ("b04", "0"))]}})
LOG = ("2026-05-12 10:20:58 I0512 step 4180 loss 2.113\n"
       "2026-05-12 10:21:04 I0512 step 4181 loss 2.110\n")


def _facts(*files: tuple[str, str, str, dict]):
    return build_facts([RawArtifact(format=fmt, data=text.encode(), path=path, captured_at=NOW, **ctx)
                        for path, fmt, text, ctx in files], captured_at=NOW)


def test_nodes_whose_exporter_answered_up_0_are_unread_and_the_log_silence_is_measured():
    facts = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}),
                   ("gpu/up.json", "prometheus-query-json", UP, {}),
                   ("logs/77310/out.log", "job-log", LOG, {"job": "77310"}))
    assert unread_nodes(facts, "77310") == ["b03", "b04"]
    assert 54 <= (silent_minutes(facts, "77310") or 0) <= 56


def test_no_up_series_means_no_gap_and_a_log_without_times_gives_none():
    facts = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}),
                   ("logs/77310/out.log", "job-log", "step 4181 loss 2.110\n", {"job": "77310"}))
    assert unread_nodes(facts, "77310") == [] and silent_minutes(facts, "77310") is None


def test_an_array_named_by_its_id_is_known_through_its_tasks():
    from tools.read.coverage import _subject
    sacct = "JobID|State|ExitCode\n4410_0|RUNNING|0:0\n4410_1|FAILED|1:0\n4410_2|FAILED|1:0\n4410_2.batch|FAILED|1:0\n"
    facts = _facts(("slurm/sacct.txt", "sacct-text", sacct, {}))
    s = _subject(facts, "job:4410")
    assert s.known and s.kind == "job" and s.state == "array of 3 task(s): 2 FAILED, 1 RUNNING"
    assert facts.array_tasks("4410") == ["4410_0", "4410_1", "4410_2"] and facts.array_tasks("441") == []
    assert not _subject(facts, "job:4411").known


def test_progress_printed_without_times_after_the_last_timestamp_is_not_silence():
    log = LOG + "{'loss': 1.0371, 'epoch': 0.81, 'train_samples_per_second': 401.3}\n" * 3
    facts = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}), ("logs/77310/out.log", "job-log", log, {"job": "77310"}))
    assert silent_minutes(facts, "77310") is None
    # One untimed line (a banner, a warning) does not hide a silence.
    facts = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}),
                   ("logs/77310/out.log", "job-log", LOG + "{'loss': 1.03}\n", {"job": "77310"}))
    assert 54 <= (silent_minutes(facts, "77310") or 0) <= 56


def test_a_log_that_reports_hourly_is_not_silent_within_its_own_cadence():
    hourly = "".join(f"2026-05-12T{h:02d}:00:00Z  step  {1000 * h}  wall/step 2.41s\n" for h in range(4, 11))
    facts = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}), ("logs/77310/out.log", "job-log", hourly, {"job": "77310"}))
    assert silent_minutes(facts, "77310") is None  # 76 min after an hourly line: within 1.5 x its interval
    stale = "".join(f"2026-05-12T{h:02d}:00:00Z  step  {1000 * h}\n" for h in range(4, 9))  # silent since 08:00
    gone = _facts(("slurm/squeue.txt", "squeue-text", SQUEUE, {}), ("logs/77310/out.log", "job-log", stale, {"job": "77310"}))
    assert 195 <= (silent_minutes(gone, "77310") or 0) <= 197  # 3 h 16 min: past 1.5 h
