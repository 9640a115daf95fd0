"""A tiny in-memory Slurm controller for execution tests: it answers `scontrol update/show node`,
`scontrol hold/release/requeue/show job`, `scancel` and `sbatch` the way the real commands change
state, and records every argv. A real slurmctld cannot run inside unit tests (the sandbox
integration tests cover that); this stands in only for the command runner."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DIAG_PASS = (Path(__file__).parents[2] / "fixtures" / "dcgmi-diag-json" / "3.3-level2-pass.json").read_bytes()

__all__ = ["FakeSlurm"]


class FakeSlurm:
    """CommandRunner over a dict of node name -> (state, reason)."""

    def __init__(self, nodes: Sequence[str] = ()) -> None:
        self.nodes: dict[str, tuple[str, str | None]] = {n: ("IDLE", None) for n in nodes}
        self.jobs: dict[str, str] = {}
        self.excluded: dict[str, str] = {}
        self.next_job = 90001
        self.argv: list[list[str]] = []
        self.diag_json = DIAG_PASS
        """What `srun ... dcgmi diag -r N -j` prints (real `dcgmi diag -j` JSON)."""

    @property
    def mutations(self) -> list[list[str]]:
        """Every command run that is not a read-back (`scontrol show ...`, `squeue`)."""
        return [a for a in self.argv if a[:2] != ["scontrol", "show"] and a[0] != "squeue"]

    def run(self, argv: Sequence[str], *, timeout_s: float = 30.0, input_bytes: bytes | None = None) -> bytes:
        argv = list(argv)
        self.argv.append(argv)
        if argv[:2] == ["scontrol", "update"] and argv[2].startswith("NodeName="):
            kv = dict(a.split("=", 1) for a in argv[2:])
            state = "IDLE+DRAIN" if kv.get("State") == "DRAIN" else "IDLE"
            self.nodes[kv["NodeName"]] = (state, kv.get("Reason") if state != "IDLE" else None)
            return b""
        if argv[:3] == ["scontrol", "show", "node"]:
            state, reason = self.nodes.get(argv[3], ("IDLE", None))
            text = f"NodeName={argv[3]} Arch=x86_64 CoresPerSocket=56\n   State={state} ThreadsPerCore=2\n   Partitions=gpu\n"
            if reason:
                text += f"   Reason={reason} [warden@2026-11-29T10:20:00]\n"
            return text.encode()
        if argv[0] == "srun" and "dcgmi" in argv:
            return self.diag_json
        if argv[0] == "scancel":
            self.jobs[argv[1]] = "CANCELLED"
            return b""
        if argv[0] == "squeue":
            return b""
        if argv[0] == "sbatch":
            job = str(self.next_job)
            self.next_job += 1
            self.jobs[job] = "PENDING"
            self.excluded[job] = next((a.split("=", 1)[1] for a in argv if a.startswith("--exclude=")), "(null)")
            return f"{job}\n".encode()
        if argv[:3] == ["scontrol", "write", "batch_script"]:
            # What scontrol 22.05 prints when slurmctld still holds the script.
            return f"batch script for job {argv[3]} written to {argv[4]}\n".encode()
        if argv[:3] == ["scontrol", "show", "job"]:
            state = self.jobs.get(argv[3], "RUNNING")
            exc = self.excluded.get(argv[3], "(null)")
            return (f"JobId={argv[3]} JobName=x\n   JobState={state} Reason=None\n"
                    f"   ReqNodeList=(null) ExcNodeList={exc}\n").encode()
        return b"ok\n"
