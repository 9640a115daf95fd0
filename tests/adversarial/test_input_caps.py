"""Adversarial class from issue 15 item 6: inputs big enough to hang a run.

Before (measured on the shared 2 cores, `warden diagnose` of a bundled incident with one file
swapped): a 50 MB kernel log took 112 s, a 1M-line job_stats file 219 s and 3.2 GB, a
200,000-entry manifest 171 s (the incident alone: 9 s). Now a log keeps its newest lines, job_stats
its first entries, other files over their cap are not read, each recorded as unreadable evidence
saying what was cut; an over-long manifest is refused before it is parsed (after: 14 s, 17 s and
7 s with the default caps). The caps are set small here through ``WARDEN_INPUT_*`` so the files
stay small and the tests fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.errors import CommandError, ConfigError, SnapshotError
from tools.live.collect import LiveCollector, unreadable_of
from tools.live.model import LivePlanInput, LustreItem
from tools.read.context import ReadContext
from tools.sources.base import FetchRequest, RawArtifact
from tools.sources.local import LocalSource

XID = "[{t:>12.6f}] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
NOISE = "[{t:>12.6f}] systemd[1]: Started Session {t:.0f} of user alice.\n"
ENTRY = ("- job_id:          {j}\n  snapshot_time:   1772618100\n"
         "  open:            {{ samples:     5820331, unit:  reqs }}\n"
         "  getattr:         {{ samples:    31882004, unit:  reqs }}\n")


def snapshot(tmp_path: Path, files: dict[str, tuple[str, str, bytes]]) -> Path:
    root = tmp_path / "snap"
    entries = []
    for rel, (fmt, node, data) in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        entries.append({"path": rel, "format": fmt, **({"node": node} if node else {})})
    (root / "manifest.yaml").write_text(json.dumps({"captured_at": "2026-03-04T10:15:00Z", "files": entries}))
    return root


def kernel_log(lines: int) -> bytes:
    """An Xid 79 at the very start and at the very end, noise between."""
    body = [XID.format(t=1.0)] + [NOISE.format(t=2.0 + i) for i in range(lines - 2)] + [XID.format(t=9e5)]
    return "".join(body).encode()


def test_a_long_kernel_log_keeps_its_newest_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_LOG_MAX_LINES", "1000")
    facts = ReadContext.from_snapshot(snapshot(tmp_path, {"kernel/gpu01.log": ("kernel-log", "gpu01",
                                                                               kernel_log(5000))})).facts
    xids = [e for e in facts.kernel_events if e.kind == "xid"]
    assert len(xids) == 1 and xids[0].line == 1000  # the newest Xid, in the last 1,000 lines; not the oldest
    (cut,) = facts.unreadable
    assert (cut.kind, cut.path, cut.node) == ("cut", "kernel/gpu01.log", "gpu01")
    assert cut.reason.startswith("cut: read the last 1,000 lines") and "WARDEN_INPUT_LOG_MAX_LINES" in cut.reason


def test_a_large_kernel_log_is_read_from_its_end_at_a_line_boundary(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_LOG_MAX_BYTES", "8192")
    data = kernel_log(3000)
    facts = ReadContext.from_snapshot(snapshot(tmp_path, {"kernel/gpu01.log": ("kernel-log", "gpu01", data)})).facts
    assert [e.kind for e in facts.kernel_events].count("xid") == 1
    assert all(e.message and not e.message[0].isdigit() for e in facts.kernel_events)  # no half line first
    (cut,) = facts.unreadable
    assert cut.kind == "cut" and f"of {len(data):,} bytes" in cut.reason and "LOG_MAX_BYTES" in cut.reason


def test_job_stats_keep_whole_entries_up_to_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_JOB_STATS_MAX_LINES", "100")
    data = ("mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + "".join(ENTRY.format(j=1000 + i) for i in range(60)))
    facts = ReadContext.from_snapshot(snapshot(tmp_path, {"lustre/job_stats.txt": ("lctl-job-stats", "",
                                                                                   data.encode())})).facts
    jobs = {s.job_id for s in facts.job_stats}
    assert jobs == {str(1000 + i) for i in range(24)}  # 2 header lines + 24 whole 4-line entries <= 100 lines
    (cut,) = facts.unreadable
    assert cut.kind == "cut" and cut.reason.startswith("cut: read the first 24 of 60 job_stats entries")


def test_a_structured_file_over_the_cap_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_MAX_FILE_BYTES", "4096")
    squeue = ("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
              + "".join(f"{4000 + i:>18}       gpu    train    alice  R      41:00      1 gpu01\n" for i in range(100)))
    facts = ReadContext.from_snapshot(snapshot(tmp_path, {"slurm/squeue.txt": ("squeue-text", "", squeue.encode())})).facts
    assert facts.jobs == []
    (u,) = facts.unreadable
    assert u.kind == "file" and "not read:" in u.reason and "over the 4,096 bytes cap" in u.reason


def test_a_manifest_over_the_entry_cap_is_refused_before_it_is_parsed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_MAX_MANIFEST_ENTRIES", "10")
    root = snapshot(tmp_path, {f"logs/{i}/a.out": ("job-log", "", b"x\n") for i in range(11)})
    with pytest.raises(SnapshotError, match="lists about 11 files, over the cap of 10"):
        ReadContext.from_snapshot(root)


def test_a_bad_cap_names_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_LOG_MAX_LINES", "lots")
    with pytest.raises(ConfigError, match="WARDEN_INPUT_LOG_MAX_LINES"):
        ReadContext.from_snapshot(snapshot(tmp_path, {"kernel/gpu01.log": ("kernel-log", "gpu01", b"x\n")}))


class _NoScheduler:
    """A cluster whose scheduler commands fail; anything else really runs here (the Lustre ``cat``)."""

    name = "local"

    def __init__(self) -> None:
        self.local = LocalSource()

    def fetch(self, req: FetchRequest) -> RawArtifact:
        if req.argv and req.argv[0] == "cat":
            return self.local.fetch(req)
        raise CommandError(req.argv or [], 1, "slurm_load_jobs error: Unable to contact slurm controller")


def test_live_output_gets_the_same_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_JOB_STATS_MAX_LINES", "100")
    stats = tmp_path / "job_stats"
    stats.write_text("mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + "".join(ENTRY.format(j=i) for i in range(60)))
    col = LiveCollector(LivePlanInput(lustre=[LustreItem(format="lctl-job-stats", path=str(stats))]), _NoScheduler())
    arts = [a for a in col.collect() if a.format == "lctl-job-stats"]
    assert len(arts) == 1 and arts[0].data.count(b"- job_id:") == 24
    cut = [u for u in unreadable_of(col) if u.kind == "cut"]
    assert [(u.format, u.command) for u in cut] == [("lctl-job-stats", f"cat {stats}")]
