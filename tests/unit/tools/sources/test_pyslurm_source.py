"""The pyslurm source on pyslurm-shaped data: objects with pyslurm 25.11's Job/Node attribute names
(pyslurm itself cannot be built here: Debian 12 ships Slurm 22.05 headers; see the source's docstring).

Attribute names follow pyslurm's own docs (pyslurm/core/job/job.pxd and pyslurm/core/node.pxd in
PySlurm/pyslurm): Job.id, name, user_name, state, state_reason, allocated_nodes, num_nodes, cpus,
time_limit (minutes), submit_time/start_time/end_time (Unix), run_time (s), working_directory,
standard_output, standard_error, excluded_nodes, batch_host, gres_per_node; Node.name, state
("IDLE+DRAIN"), reason, reason_user, reason_time, partitions, total_cpus, allocated_cpus,
real_memory, configured_gres, allocated_gres, boot_time, slurm_version.
"""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from tools.errors import SourceError
from tools.parsers import parse_artifact
from tools.sources.base import FetchRequest
from tools.sources.pyslurm_source import PyslurmSource, job_from_pyslurm, node_from_pyslurm

T0 = int(datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc).timestamp())


def _job(**kw):
    base = dict(id=4242, name="llm; rm -rf ~ $(id)", user_name="alice", account="ml", partition="gpu", state="RUNNING",
                state_reason="None", allocated_nodes="gpu[016-017]", num_nodes=2, cpus=64, time_limit=1440,
                submit_time=T0 - 600, start_time=T0, end_time=T0 + 86400, run_time=3600, priority=1000, qos="normal",
                exit_code=0, exit_code_signal=0, working_directory="/lustre/alice/run1",
                standard_output="/lustre/alice/run1/out-4242.log", standard_error="/lustre/alice/run1/out-4242.log",
                command="/lustre/alice/run1/train.sbatch", required_nodes=None, excluded_nodes="gpu003",
                reservation=None, batch_host="gpu016", gres_per_node={"gpu": 8})
    base.update(kw)
    return SimpleNamespace(**base)


def _node(**kw):
    base = dict(name="gpu017", state="MIXED+DRAIN", reason="warden: GPU hardware fault (Xid 79)", reason_user="warden",
                reason_time=T0 + 60, partitions=["gpu"], total_cpus=128, allocated_cpus=64, cpu_load=31.5,
                real_memory=1_000_000, allocated_memory=500_000, free_memory=400_000, configured_gres={"gpu:h100": 8},
                allocated_gres={"gpu:h100": 8}, boot_time=T0 - 86400, last_busy_time=T0, slurmd_start_time=T0 - 86000,
                slurm_version="25.11.0")
    base.update(kw)
    return SimpleNamespace(**base)


def test_job_mapping() -> None:
    j = job_from_pyslurm(_job())
    assert (j.job_id, j.name, j.user, j.state, j.reason) == ("4242", "llm; rm -rf ~ $(id)", "alice", "RUNNING", None)
    assert j.nodes == ["gpu016", "gpu017"] and j.num_gpus == 16 and j.time_limit_s == 86400 and j.elapsed_s == 3600
    assert j.start_time == datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc) and j.exc_nodes == ["gpu003"]
    assert j.stdout_path == "/lustre/alice/run1/out-4242.log" and j.work_dir == "/lustre/alice/run1"


def test_pending_job_without_allocation() -> None:
    j = job_from_pyslurm(_job(state="PENDING", state_reason="PartitionConfig", allocated_nodes=None, start_time=0,
                              batch_host=None, num_nodes=5))
    assert j.state == "PENDING" and j.reason == "PartitionConfig" and j.nodes == [] and j.start_time is None


def test_node_mapping_splits_state_flags() -> None:
    n = node_from_pyslurm(_node())
    assert (n.state, n.flags, n.drained) == ("MIXED", ["DRAIN"], True)
    assert n.gpus_total == 8 and n.gpus_used == 8 and n.reason.startswith("warden:") and n.version == "25.11.0"


class _FakePyslurm:
    """Stands in for the pyslurm module (it cannot be built on this Slurm 22.05 host)."""

    class Jobs:
        @staticmethod
        def load():
            return {4242: _job(), 4243: _job(id=4243, state="PENDING", state_reason="Priority", allocated_nodes=None,
                                             name="line\nJobId=1 forged")}

    class Nodes:
        @staticmethod
        def load():
            return {"gpu017": _node(), "gpu018": _node(name="gpu018", state="IDLE", reason=None)}


def test_rendered_text_parses_back_to_the_same_models() -> None:
    src = PyslurmSource(module=_FakePyslurm)
    jobs = parse_artifact(src.fetch(FetchRequest(format="scontrol-job-text", path="slurm/scontrol_show_job.txt")))
    direct = {j.job_id: j for j in map(job_from_pyslurm, _FakePyslurm.Jobs.load().values())}
    assert {j.job_id for j in jobs} == {"4242", "4243"}  # the newline in a name forges no record
    for j in jobs:
        d = direct[j.job_id]
        assert (j.state, j.user, j.nodes, j.num_gpus, j.time_limit_s, j.stdout_path, j.exc_nodes, j.start_time) == (
            d.state, d.user, d.nodes, d.num_gpus, d.time_limit_s, d.stdout_path, d.exc_nodes, d.start_time)
    nodes = {n.name: n for n in parse_artifact(src.fetch(FetchRequest(format="scontrol-node-text")))}
    assert nodes["gpu017"].drained and nodes["gpu017"].reason == "warden: GPU hardware fault (Xid 79)"
    assert not nodes["gpu018"].drained and nodes["gpu018"].gres == "gpu:h100:8"


def test_other_formats_go_to_the_fallback_and_missing_pyslurm_is_a_clear_error() -> None:
    class Fallback:
        name = "fallback"

        def fetch(self, req):
            raise SourceError(f"fallback asked for {req.format}")

    with pytest.raises(SourceError, match="fallback asked for sacct-text"):
        PyslurmSource(Fallback(), module=_FakePyslurm).fetch(FetchRequest(format="sacct-text", argv=["sacct"]))
    with pytest.raises(SourceError, match="pyslurm cannot be imported"):
        PyslurmSource().fetch(FetchRequest(format="scontrol-job-text"))
