"""The live fetch plan on real Slurm 22.05 captures: what is fetched, for which nodes and jobs, bounded;
and warden.toml validation."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from agent.live.config import LiveConfig, load_live_config, render_toml
from tools.errors import ConfigError
from tools.facts import build_facts
from tools.live.guard import job_log_argv
from tools.live.model import JobLogAccess, KernelLogAccess, LiveBounds, LivePlanInput, LustreItem
from tools.live.plan import DCGM_FIELDS, display, followup_requests, nodes_that_matter, safe_name, slurm_requests
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIX = Path(__file__).parents[3] / "fixtures"
NOW = datetime(2026, 11, 29, 16, 0, tzinfo=timezone.utc)


def _art(fmt: str, name: str) -> RawArtifact:
    return RawArtifact(format=fmt, data=(FIX / fmt / name).read_bytes(), path=name)  # type: ignore[arg-type]


@pytest.fixture
def facts():
    return build_facts([_art("scontrol-job-text", "22.05-mixed.txt"), _art("scontrol-node-text", "22.05-drain-down.txt")],
                       captured_at=NOW)


def _cfg(**kw) -> LivePlanInput:
    return LivePlanInput(cluster="c", prometheus_url="http://prom:9090",
                         kernel_logs=KernelLogAccess(kind="file", path="/var/log/nodes/{node}/kern.log"),
                         job_logs=JobLogAccess(roots=["/tmp/warden-fixtures.56Dq"]), **kw)


def test_slurm_phase_is_every_scheduler_view_with_a_bounded_sacct_window() -> None:
    reqs = slurm_requests(_cfg(), NOW)
    assert [r.format for r in reqs] == ["scontrol-job-text", "scontrol-node-text", "squeue-text", "sinfo-text",
                                        "sinfo-reasons-text", "sacct-text", "sdiag-text", "sacctmgr-qos-text"]
    sacct = reqs[5].argv or []
    assert sacct[:4] == ["sacct", "-a", "-X", "-p"] and sacct[4] == "-S" and sacct[5].startswith("2026-11-29T")
    assert all(r.path and r.path.startswith("slurm/") for r in reqs)


def test_followups_cover_nodes_that_matter_and_jobs_that_ran_or_failed(facts) -> None:
    nodes = nodes_that_matter(facts, 32)
    assert {"gpu02", "gpu03", "gpu04"} <= set(nodes)  # drained / down* nodes first
    reqs = followup_requests(_cfg(), facts, NOW)
    kernel = [r for r in reqs if r.format == "kernel-log"]
    assert [r.node for r in kernel] == nodes
    assert kernel[0].argv == ["tail", "-n", "2000", f"/var/log/nodes/{nodes[0]}/kern.log"]
    logs = [r for r in reqs if r.format == "job-log"]
    assert logs and all(r.job and display(r).startswith("tail -c 262144 /tmp/warden-fixtures.56Dq/work/")
                        and r.argv == job_log_argv(r.argv[4], 262144, "root", ["/tmp/warden-fixtures.56Dq"])
                        for r in logs)
    running = {j.job_id for j in facts.jobs if j.state == "RUNNING"}
    assert running <= {r.job for r in logs}
    prom = [r for r in reqs if r.format == "prometheus-query-json"]
    q = parse_qs(urlsplit(prom[0].url or "").query)
    assert all(f in q["query"][0] for f in DCGM_FIELDS) and "gpu02" in q["query"][0]
    assert urlsplit(prom[1].url or "").path == "/api/v1/query_range"


def test_bounds_keep_a_large_cluster_small(facts) -> None:
    reqs = followup_requests(_cfg(bounds=LiveBounds(max_nodes=1, max_job_logs=1)), facts, NOW)
    assert len([r for r in reqs if r.format == "kernel-log"]) == 1
    assert len({r.job for r in reqs if r.format == "job-log"}) == 1


def test_lustre_files_and_commands_and_safe_paths() -> None:
    cfg = _cfg(lustre=[LustreItem(format="lctl-md-stats", fs="scratch", path="/state/md_stats.txt"),
                       LustreItem(format="lfs-df", fs="../x", argv=["lfs", "df", "/scratch"])])
    reqs = [r for r in followup_requests(cfg, build_facts([], captured_at=NOW), NOW) if r.format.startswith(("lctl", "lfs"))]
    assert reqs[0].argv == ["cat", "/state/md_stats.txt"] and reqs[0].path == "lustre/scratch/lctl_md_stats.txt"
    assert reqs[1].argv == ["lfs", "df", "/scratch"] and ".." not in (reqs[1].path or "")
    assert safe_name("gpu01; rm -rf /") == "gpu01__rm_-rf__"


def test_real_empty_queue_and_newline_job_name_parse() -> None:
    assert parse_artifact(RawArtifact(format="scontrol-job-text", path="x",
                                      data=(FIX / "scontrol-job-text" / "22.05-empty-queue.out").read_bytes())) == []
    (job,) = parse_artifact(RawArtifact(format="scontrol-job-text", path="x",
                                        data=(FIX / "scontrol-job-text" / "22.05-newline-in-name.out").read_bytes()))
    assert job.name == "train\nrm -rf ~ $(id)" and job.user == "root" and job.state == "PENDING"  # type: ignore[union-attr]


def test_warden_toml_round_trip_and_errors(tmp_path: Path) -> None:
    cfg = LiveConfig(cluster="alps", lustre=[LustreItem(format="lfs-df", fs="scratch", argv=["lfs", "df", "/scratch"])])
    p = tmp_path / "warden.toml"
    p.write_text(render_toml(cfg))
    assert load_live_config(p) == cfg
    p.write_text('[slurm]\nvia = "ssh"\n')
    with pytest.raises(ConfigError, match="needs host"):
        load_live_config(p)
    p.write_text('[slurm]\nvia = "telnet"\n')
    with pytest.raises(ConfigError, match="slurm.via"):
        load_live_config(p)
    p.write_text('[prometheus]\nurl = "http://p"\nevil = 1\n')
    with pytest.raises(ConfigError, match="prometheus.evil"):
        load_live_config(p)
    with pytest.raises(ConfigError, match="no live configuration"):
        load_live_config(tmp_path / "absent.toml")


def test_a_node_name_from_cluster_data_never_becomes_a_path_or_an_option(facts) -> None:
    """Node names go into the kernel-log path (``{node}``) and SSH host names: a name such as
    ``../../etc/shadow`` or ``-oProxyCommand=x`` from a hostile scheduler answer is skipped."""
    f = facts.model_copy(deep=True)
    down = next(n for n in f.nodes if n.name == "gpu03")
    f.nodes += [down.model_copy(update={"name": bad}) for bad in ("../../etc/shadow", "-oProxyCommand=x")]
    f._index.clear()
    nodes = nodes_that_matter(f, 32)
    assert "../../etc/shadow" in nodes  # it does matter (down), yet nothing is fetched for it
    kernel = [r for r in followup_requests(_cfg(), f, NOW) if r.format == "kernel-log"]
    assert [r.node for r in kernel] == [n for n in nodes if n[0].isalnum() and ".." not in n]
    assert all(".." not in " ".join(r.argv or []) and "-oProxy" not in " ".join(r.argv or []) for r in kernel)
