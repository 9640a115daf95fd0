"""check_checkpoint_stall: synchronous checkpoint saves taking a large share of a job's time."""

from __future__ import annotations

from tools.checks.checkpoint_stall import CheckpointStallConfig, check_checkpoint_stall
from tools.checks.timeout import TimeoutConfig, check_job_timeout_without_checkpoint

LOG = "logs/6100/train.log"


def _log(save_s: float, every_min: int, n: int = 4, path: bool = True) -> str:
    """A DeepSpeed-style log: a save line with its path and duration every ``every_min`` minutes."""
    lines = []
    for i in range(n):
        t = f"2026-03-04 {6 + (i * every_min) // 60:02d}:{(i * every_min) % 60:02d}:00"
        where = f" /lustre/ck/global_step{1000 * (i + 1)}" if path else ""
        lines.append(f"[{t}] INFO saved checkpoint{where} (41.3 GB, {save_s:.1f}s)")
        lines.append(f"[{t}] INFO step {1000 * (i + 1)} loss 1.9")
    return "\n".join(lines) + "\n"


def _facts(make_facts, text: str):
    return make_facts((LOG, "job-log", text), **{LOG: {"job": "6100"}})


def test_saves_taking_a_third_of_the_time_are_an_io_stall_for_the_owner(make_facts):
    (f,) = check_checkpoint_stall(_facts(make_facts, _log(600.0, 30)), CheckpointStallConfig())
    assert f.root_cause == "io_bandwidth_bound" and f.culprits == ["job:6100"] and "33%" in f.message
    assert [a.type for a in f.suggested_actions] == ["notify_owner"]


def test_short_or_rare_saves_do_not_fire(make_facts):
    assert check_checkpoint_stall(_facts(make_facts, _log(30.0, 2)), CheckpointStallConfig()) == []  # 30 s saves
    assert check_checkpoint_stall(_facts(make_facts, _log(300.0, 60)), CheckpointStallConfig()) == []  # 8%


def test_a_save_line_without_a_path_still_counts_as_a_save(make_facts):
    facts = _facts(make_facts, _log(600.0, 30, path=False))
    assert len(check_checkpoint_stall(facts, CheckpointStallConfig())) == 1
    # and a job that logged such saves is not one that "saved nothing" at its time limit
    assert all("no checkpoint" not in f.message for f in check_job_timeout_without_checkpoint(facts, TimeoutConfig()))
