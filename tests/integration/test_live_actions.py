"""The job actions no sandbox fault proposes, executed for real through agent/execute.py against the
sandbox's Slurm: hold/release, update_job, requeue, cancel, resize_job — each verified by reading
the state back, and each run twice to show the second run does no harm."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.live.act import collect_live
from agent.live.session import sandbox_config
from sandbox import cluster, jobs
from sandbox.layout import Layout
from tests.integration.live_helpers import Executor, cancel_jobs, wait_healthy
from tools.models.findings import ActionSpec
from tools.sources.local import LocalSource


@pytest.fixture
def runner(state_dir: Path, tmp_path: Path) -> LocalSource:
    return LocalSource(env=cluster.env(state_dir), cwd=tmp_path)


def _sbatch(runner: LocalSource, state_dir: Path, tmp_path: Path, *extra: str) -> str:
    train = Layout.of(state_dir).bin / "train.py"
    out = runner.run(["sbatch", "--parsable", "-p", "gpu", "--gres=gpu:1", "-o", str(tmp_path / "job-%j.out"),
                      *extra, str(train), "--run-dir", str(tmp_path), "--step-seconds", "1"], timeout_s=30)
    return out.decode().strip().split(";")[0]


def _twice(ex: Executor, spec: ActionSpec) -> list[str]:
    observed = []
    for _ in range(2):
        o = ex.run(spec)
        assert o.status == "executed", o.message
        assert o.verification is not None and o.verification.ok, o.verification
        observed.append(o.verification.observed)
    return observed


def test_job_actions_execute_verify_and_repeat_harmlessly(state_dir: Path, runner: LocalSource, tmp_path: Path) -> None:
    lay = Layout.of(state_dir)
    pending = _sbatch(runner, state_dir, tmp_path, "--begin=now+3600")
    running = _sbatch(runner, state_dir, tmp_path)
    later = _sbatch(runner, state_dir, tmp_path, "--begin=now+7200")
    submitted = [pending, running, later]
    try:
        jobs.wait_job_state(lay, running, {"RUNNING"}, timeout_s=60)
        ex = Executor.make(tmp_path, runner, collect_live(sandbox_config(state_dir), runner=runner).ctx.facts)

        held = _twice(ex, ActionSpec(type="hold_job", job=pending))
        assert all("Held" in o for o in held)
        assert all("Held" not in o for o in _twice(ex, ActionSpec(type="release_job", job=pending)))
        assert all("TimeLimit=1800s" in o for o in _twice(ex, ActionSpec(type="update_job", job=pending,
                                                                           time_limit_min=30)))
        begun = _twice(ex, ActionSpec(type="update_job", job=later, start_time="now"))  # its --begin moved to now
        assert all("Reason=BeginTime" not in o for o in begun)

        requeued = _twice(ex, ActionSpec(type="requeue_job", job=running))
        assert "JobState=PENDING" in requeued[0]

        resize = ex.run(ActionSpec(type="resize_job", job=running, num_nodes=2, exclude_nodes=["gpu04"]))
        assert resize.status == "executed" and resize.verification and resize.verification.ok, resize.message
        assert "NumNodes=2" in resize.verification.observed and "ExcNodeList=gpu04" in resize.verification.observed
        submitted.append(resize.execution.outputs[-1].strip())  # type: ignore[union-attr]
        again = ex.run(ActionSpec(type="resize_job", job=running, num_nodes=2, exclude_nodes=["gpu04"]))
        assert again.status == "executed" and again.execution and again.execution.commands == []  # not submitted twice

        cancelled = _twice(ex, ActionSpec(type="cancel_job", job=pending))
        assert all("CANCELLED" in o for o in cancelled)
    finally:
        cancel_jobs(LocalSource(env=cluster.env(state_dir)), submitted)
    wait_healthy(state_dir, runner)
