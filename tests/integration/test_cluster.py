"""The sandbox cluster itself: idempotent up, four GPU nodes, a job through squeue and sacct."""

from __future__ import annotations

import time
from pathlib import Path

from sandbox import cluster, jobs
from sandbox.layout import Layout, SandboxConfig
from tools.sources.base import FetchRequest
from tools.sources.local import LocalSource


def test_up_is_idempotent(state_dir: Path) -> None:
    before = {c.name: c.pid for c in cluster.status(state_dir).components}
    st = cluster.up(state_dir)
    assert st.up
    after = {c.name: c.pid for c in st.components}
    assert after == before, "a second up must not restart running daemons"


def test_env_points_slurm_commands_at_the_sandbox(state_dir: Path) -> None:
    env = cluster.env(state_dir)
    assert Path(env["SLURM_CONF"]) == Layout.of(state_dir).slurm_conf
    assert Path(env["SLURM_CONF"]).is_file()


def test_four_gpu_nodes_respond(slurm: LocalSource, config: SandboxConfig) -> None:
    art = slurm.fetch(FetchRequest(format="sinfo-text", argv=["sinfo", "-h", "-N", "-o", "%N|%G|%T|%P"]))
    rows = [line.split("|") for line in art.data.decode().splitlines()]
    assert sorted(r[0] for r in rows) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    for node, gres, state, partition in rows:
        assert gres == "gpu:4", node
        assert partition == "gpu*", node
        assert state in ("idle", "mixed", "allocated"), f"{node} is {state}"


def test_nodes_idle_when_no_job_runs(state_dir: Path, slurm: LocalSource) -> None:
    running = slurm.run(["squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i"]).decode().split()
    states = cluster.node_states(state_dir)
    if not running:
        assert set(states.values()) == {"idle"}, states
    else:
        assert any(s in ("mixed", "allocated") for s in states.values()), (running, states)


def test_a_job_shows_in_squeue_then_in_sacct(state_dir: Path, config: SandboxConfig, slurm: LocalSource) -> None:
    lay = Layout.of(state_dir)
    job = jobs.submit_training(lay, config, name="it-basic", gpus_per_node=1, run_dir=lay.jobs / f"it-basic-{time.time_ns()}",
                               train_args=["--steps", "4", "--step-seconds", "0.5", "--ckpt-every", "2"])
    jobs.wait_job_state(lay, job.job_id, {"RUNNING"}, timeout_s=30)
    queue = slurm.run(["squeue", "-h", "-o", "%i|%j|%T|%b"]).decode()
    assert f"{job.job_id}|it-basic|RUNNING|gres:gpu:1" in queue
    jobs.wait_job_state(lay, job.job_id, {"COMPLETED"}, timeout_s=60)
    argv = ["sacct", "-n", "-X", "-P", "-j", job.job_id, "-o", "JobID,JobName,State,ExitCode,AllocTRES"]
    deadline = time.monotonic() + 20  # slurmdbd receives the job's records asynchronously
    while not (acct := slurm.run(argv).decode()).startswith(f"{job.job_id}|it-basic|COMPLETED") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert acct.startswith(f"{job.job_id}|it-basic|COMPLETED|0:0|")
    assert "gres/gpu=1" in acct
    log = job.log_file.read_text()
    assert "step=4 loss=" in log
    assert sorted(p.name for p in (job.run_dir / "checkpoints").iterdir()) == ["step_000002", "step_000004"]


def test_status_reports_every_component(state_dir: Path, config: SandboxConfig) -> None:
    st = cluster.status(state_dir)
    names = {c.name for c in st.components if c.running}
    assert {"munged", "mariadb", "slurmdbd", "slurmctld", "dcgm-exporter", "prometheus"} <= names
    assert {f"slurmd-{n}" for n in config.nodes} <= names
    assert st.prometheus_url == f"http://127.0.0.1:{config.prometheus_port}"
