"""LiveCollector: a Slurm client error is kept as evidence, other failed fetches are skipped and
reported, and each artifact keeps the snapshot path its request named."""

from __future__ import annotations

from pathlib import Path

from tools.errors import CommandError, HTTPSourceError
from tools.live.collect import LiveCollector, live_context
from tools.live.model import KernelLogAccess, LivePlanInput
from tools.sources.base import FetchRequest, RawArtifact

FIX = Path(__file__).parents[3] / "fixtures"


class ScriptedSlurm:
    """A runner answering from real 22.05 captures; the controller 'is down' for sdiag.
    (Stands in for a cluster in a unit test; the sandbox integration tests run the real one.)"""

    name = "scripted"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def fetch(self, req: FetchRequest) -> RawArtifact:
        argv = req.argv or []
        self.asked.append(argv)
        files = {"scontrol-job-text": "scontrol-job-text/22.05-mixed.txt",
                 "scontrol-node-text": "scontrol-node-text/22.05-drain-down.txt",
                 "squeue-text": "squeue-text/22.05-default.txt", "sinfo-text": "sinfo-text/22.05-N.txt",
                 "sinfo-reasons-text": "sinfo-reasons-text/22.05-default.txt", "sacct-text": "sacct-text/22.05-p.txt",
                 "sacctmgr-qos-text": "sacctmgr-qos-text/22.05-parsable2.txt"}
        if req.format == "sdiag-text":
            raise CommandError(argv, 1, "sdiag: error: slurm_get_statistics: Unable to contact slurm controller "
                                        "(connect failure)\n")
        if req.format == "kernel-log":
            raise CommandError(argv, 1, "tail: cannot open '/nodes/gpu02/kernel.log' for reading: No such file")
        if req.format in files:
            return RawArtifact(format=req.format, data=(FIX / files[req.format]).read_bytes(), path=" ".join(argv))
        raise CommandError(argv, None, f"not scripted: {req.format}")


class DeadPrometheus:
    name = "http"

    def fetch(self, req: FetchRequest) -> RawArtifact:
        raise HTTPSourceError(req.url or "", None, "connection refused")


def test_errors_kept_or_skipped() -> None:
    cfg = LivePlanInput(prometheus_url="http://127.0.0.1:1",
                        kernel_logs=KernelLogAccess(kind="file", path="/nodes/{node}/kernel.log"))
    slurm = ScriptedSlurm()
    col = LiveCollector(cfg, slurm, http=DeadPrometheus())
    arts = col.collect()
    kept = {a.path: a for a in arts}
    assert b"Unable to contact slurm controller" in kept["slurm/sdiag.txt"].data
    failed = {r.format for r, _ in col.failures}
    assert failed >= {"kernel-log", "prometheus-query-json"} and "sdiag-text" not in failed
    assert all(not a.path.startswith(("scontrol", "tail")) for a in arts)


def test_live_context_parses_once_with_the_collection_time() -> None:
    cfg = LivePlanInput()
    slurm = ScriptedSlurm()
    col = LiveCollector(cfg, slurm, http=DeadPrometheus())
    ctx = live_context(col)
    facts = ctx.facts
    assert facts.captured_at == col.captured_at and facts.jobs and facts.nodes
    n = len(slurm.asked)
    assert ctx.facts is facts and len(slurm.asked) == n
