"""Adversarial class from issue 15 item 3: paths that come from cluster data point Warden at files
it must not read.

Before: a job whose StdOut/StdErr was ``/etc/shadow`` (or a symlink to it, or a FIFO, or
``/dev/zero``) made the live collector, running as root, ``tail`` that file into the snapshot.
Now a job log is read only when the file actually opened lies under ``job_logs.roots`` and belongs
to the job's user; every refusal is unreadable evidence naming the job and why. Checkpoint
folders (from a job's WorkDir or a log line) get the same rule, and the files a checkpoint
manifest lists are read as the job's user.

The Slurm side is a scripted ``scontrol show job`` (hostile jobs, in the real 22.05 text format);
the reads are real: ``sh``, ``tail``, ``realpath``, ``stat`` on real files through LocalSource.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path

import pytest

from tools.errors import CommandError
from tools.live.collect import LiveCollector, live_context
from tools.live.model import JobLogAccess, LivePlanInput
from tools.sources.base import FetchRequest, RawArtifact
from tools.sources.local import LocalSource

SECRET = b"root:$6$SECRET-HASH-warden-must-not-read:19000:0:99999:7:::\n"
USER = getpass.getuser()


def _job(job_id: int, out: str, user: str = USER, workdir: str = "/tmp") -> str:
    uid = os.getuid()
    return (f"JobId={job_id} JobName=train{job_id}\n   UserId={user}({uid}) GroupId={user}({os.getgid()}) MCS_label=N/A\n"
            f"   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n   ExitCode=1:0\n"
            f"   SubmitTime=2026-11-29T15:0{job_id % 10}:00 StartTime=2026-11-29T15:0{job_id % 10}:01 "
            f"EndTime=2026-11-29T15:0{job_id % 10}:30\n   Partition=gpu\n   NodeList=gpu01\n   BatchHost=gpu01\n"
            f"   WorkDir={workdir}\n   StdErr={out}\n   StdIn=/dev/null\n   StdOut={out}\n\n")


class HostileCluster:
    """scontrol answers with the jobs given; every other command really runs on this host."""

    name = "local"

    def __init__(self, jobs: str) -> None:
        self.jobs = jobs.encode()
        self.local = LocalSource()
        self.ran: list[list[str]] = []

    def fetch(self, req: FetchRequest) -> RawArtifact:
        if req.format == "scontrol-job-text":
            return RawArtifact(format=req.format, data=self.jobs, path="slurm/scontrol_show_job.txt")
        if req.format != "job-log":
            raise CommandError(req.argv or [], 1, "not part of this cluster")
        return self.local.fetch(req)

    def run(self, argv, *, timeout_s=30.0, input_bytes=None) -> bytes:  # noqa: ANN001 - CommandRunner
        self.ran.append(list(argv))
        return self.local.run(argv, timeout_s=timeout_s)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "scratch"
    (root / "alice").mkdir(parents=True)
    secret = tmp_path / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    (root / "alice" / "ok.out").write_bytes(b"step 10 loss 1.0\n" * 100)
    (root / "alice" / "link.out").symlink_to(secret)
    os.mkfifo(root / "alice" / "fifo.out")
    out = {"root": str(root), "secret": str(secret), "ok": str(root / "alice" / "ok.out"),
           "symlink": str(root / "alice" / "link.out"), "dotdot": f"{root}/alice/../../etc/shadow",
           "fifo": str(root / "alice" / "fifo.out"), "dev": "/dev/zero"}
    if os.getuid() == 0:  # a file inside the root that another user owns (e.g. a hard link to theirs)
        theirs = root / "alice" / "theirs.out"
        theirs.write_bytes(SECRET)
        os.chown(theirs, 65534, 65534)
        out["other_owner"] = str(theirs)
    return out


def _collect(jobs: str, roots: list[str]) -> tuple[LiveCollector, list[RawArtifact]]:
    cfg = LivePlanInput(job_logs=JobLogAccess(roots=roots))
    col = LiveCollector(cfg, HostileCluster(jobs))
    return col, col.collect()


def test_hostile_stdout_paths_are_refused_and_recorded(files: dict[str, str]) -> None:
    hostile = [k for k in files if k not in ("root", "ok")] + (["etc_shadow"] if Path("/etc/shadow").exists() else [])
    paths = {**files, "etc_shadow": "/etc/shadow"}
    jobs = "".join(_job(100 + i, paths[k]) for i, k in enumerate(["ok", *hostile]))
    col, arts = _collect(jobs, [files["root"]])
    got = {a.job: a for a in arts if a.format == "job-log"}
    assert list(got) == ["100"] and got["100"].data.startswith(b"step 10 loss")
    assert got["100"].command.startswith(f"tail -c 262144 {files['ok']} (checked under job_logs.roots")
    assert all(b"SECRET" not in a.data for a in arts)
    why = {r.job: reason for r, reason in col.failures if r.format == "job-log"}
    assert set(why) == {str(101 + i) for i in range(len(hostile))}
    for i, k in enumerate(hostile):
        reason = why[str(101 + i)]
        expect = {"secret": "not under job_logs.roots", "etc_shadow": "not under job_logs.roots",
                  "symlink": f"is {files['secret']}, outside job_logs.roots", "dotdot": "not under job_logs.roots",
                  "fifo": "not a regular file", "dev": "not under job_logs.roots",
                  "other_owner": "is owned by nobody, not by the job's user"}[k]
        assert expect in reason, (k, reason)


def test_refusals_reach_the_facts_as_unreadable_evidence(files: dict[str, str]) -> None:
    col = LiveCollector(LivePlanInput(job_logs=JobLogAccess(roots=[files["root"]])),
                        HostileCluster(_job(7, files["symlink"])))
    facts = live_context(col).facts
    (u,) = [u for u in facts.unreadable if u.job == "7"]
    assert u.kind == "fetch" and u.format == "job-log" and "outside job_logs.roots" in u.reason
    assert u.command == f"tail -c 262144 {files['symlink']} (checked under job_logs.roots, owner {USER})"


def test_no_roots_configured_reads_no_job_log(files: dict[str, str]) -> None:
    col, arts = _collect(_job(1, files["ok"]), [])
    assert not [a for a in arts if a.format == "job-log"]
    ((req, why),) = [(r, w) for r, w in col.failures if r.format == "job-log"]
    assert req.job == "1" and "job_logs.roots is empty" in why


def test_a_job_whose_user_is_unknown_is_not_read(files: dict[str, str]) -> None:
    col, arts = _collect(_job(1, files["ok"], user="-rf"), [files["root"]])
    assert not [a for a in arts if a.format == "job-log"]
    assert any("owner check cannot be made" in w for _, w in col.failures)


def test_roots_must_be_real_directories() -> None:
    from pydantic import ValidationError

    for bad in (["/"], ["scratch"], ["/a\nb"]):
        with pytest.raises(ValidationError, match="absolute directory other than /"):
            JobLogAccess(roots=bad)


def test_checkpoints_outside_the_roots_or_through_symlinks_are_not_read(files: dict[str, str], tmp_path: Path) -> None:
    import hashlib

    from tools.actions.checkpoints import newest_verified_checkpoint, verify_checkpoint
    from tools.live.guard import GuardedRunner

    ck = Path(files["root"]) / "alice" / "checkpoints" / "step-10"
    ck.mkdir(parents=True)
    (ck / "model.pt").symlink_to(files["secret"])  # the manifest "lists" the secret through a link
    (ck / "manifest.json").write_text(json.dumps({"step": 10, "files": [
        {"path": "model.pt", "size_bytes": len(SECRET), "sha256": hashlib.sha256(SECRET).hexdigest()}]}))
    runner = HostileCluster("")
    verify_checkpoint(runner, str(ck))  # unguarded: sha256sum read the secret through the link
    assert ["sha256sum", "--", str(ck / "model.pt")] in runner.ran
    guarded = GuardedRunner(runner, [files["root"]], USER)
    check = verify_checkpoint(guarded, str(ck))
    assert not check.ok and "outside the configured roots" in (check.problem or "")
    (ck / "model.pt").unlink()
    (ck / "model.pt").write_bytes(b"weights")
    (ck / "manifest.json").write_text(json.dumps({"step": 10, "files": [
        {"path": "model.pt", "size_bytes": 7, "sha256": hashlib.sha256(b"weights").hexdigest()}]}))
    best, _ = newest_verified_checkpoint(guarded, str(ck.parent))
    assert best is not None and best.path == str(ck)  # the job's own checkpoint still verifies
    elsewhere = GuardedRunner(runner, [str(tmp_path / "other")], USER)
    assert newest_verified_checkpoint(elsewhere, str(ck.parent)) == (None, [])  # WorkDir outside: nothing read
    assert not verify_checkpoint(GuardedRunner(runner, [files["root"]], None), str(ck)).ok  # owner unknown


def test_a_hostile_log_name_stays_data_through_a_remote_shell(files: dict[str, str], tmp_path: Path) -> None:
    """Over SSH the checked read is one command line (``remote_command``) that the login node's shell
    parses: a log name full of shell syntax must reach the script as one argument and run nothing."""
    import subprocess

    from tools.live.guard import job_log_argv
    from tools.sources.ssh import remote_command

    pwned = tmp_path / "PWNED"
    name = "run $(touch PWNED) `touch PWNED`; touch PWNED 'q\"$IFS*.out"  # run from tmp_path: PWNED lands there
    log = Path(files["root"]) / "alice" / name
    log.write_bytes(b"epoch 1 done\n")
    line = remote_command(job_log_argv(str(log), 1024, USER, [files["root"]]))
    done = subprocess.run(["sh", "-c", line], capture_output=True, timeout=30, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, b"epoch 1 done\n") and not pwned.exists()
    outside = "/etc/$(touch PWNED)"
    done = subprocess.run(["sh", "-c", remote_command(job_log_argv(outside, 1024, USER, [files["root"]]))],
                          capture_output=True, timeout=30, cwd=tmp_path)
    assert done.returncode != 0 and not pwned.exists()


def test_a_resubmission_never_points_at_a_checkpoint_outside_the_roots(files: dict[str, str], tmp_path: Path) -> None:
    """The live act path: a hostile WorkDir and a proposed checkpoint outside job_logs.roots are
    verified through the guard, so nothing there is read and no checkpoint is proposed."""
    import hashlib

    from agent.live.act import live_specs
    from agent.live.config import LiveConfig
    from tools.actions import plan_spec
    from tools.facts import build_facts
    from tools.models.findings import ActionSpec, Diagnosis

    outside = tmp_path / "elsewhere" / "checkpoints" / "step-1"
    outside.mkdir(parents=True)
    (outside / "w.pt").write_bytes(b"w")
    (outside / "manifest.json").write_text(json.dumps({"step": 1, "files": [
        {"path": "w.pt", "size_bytes": 1, "sha256": hashlib.sha256(b"w").hexdigest()}]}))
    jobs = _job(42, files["ok"], workdir=str(outside.parent.parent))
    facts = build_facts([RawArtifact(format="scontrol-job-text", data=jobs.encode(), path="slurm/scontrol_show_job.txt")])
    spec = ActionSpec(type="resubmit_from_checkpoint", job="42", checkpoint=str(outside))
    d = Diagnosis(question="q", root_cause="checkpoint_corrupt", confidence=0.9, summary="s",
                  proposed_actions=[plan_spec(spec)])
    runner = HostileCluster("")
    checks: dict = {}
    (got,) = live_specs(d, facts, LiveConfig(job_logs=JobLogAccess(roots=[files["root"]])), runner, checks)
    assert got.checkpoint is None and not runner.ran  # refused in Python: nothing ran on the cluster
    assert [c.ok for c in checks["42"]] == [False] and "outside the configured roots" in (checks["42"][0].problem or "")
    (ok,) = live_specs(d, facts, LiveConfig(job_logs=JobLogAccess(roots=[str(tmp_path / "elsewhere")])), runner, checks)
    assert ok.checkpoint == str(outside) and checks["42"][0].ok  # inside the roots it verifies as before


def test_a_checkpoint_folder_that_is_a_symlink_out_of_the_roots_is_not_read(files: dict[str, str],
                                                                           tmp_path: Path) -> None:
    """The folder itself (``{workdir}/checkpoints``, or one step of it) links out of the roots, to a
    place holding a well-formed manifest: nothing there is hashed, and no checkpoint is proposed."""
    import hashlib

    from tools.actions.checkpoints import newest_verified_checkpoint, verify_checkpoint
    from tools.live.guard import GuardedRunner

    outside = tmp_path / "elsewhere" / "step-10"
    outside.mkdir(parents=True)
    (outside / "model.pt").write_bytes(SECRET)
    (outside / "manifest.json").write_text(json.dumps({"step": 10, "files": [
        {"path": "model.pt", "size_bytes": len(SECRET), "sha256": hashlib.sha256(SECRET).hexdigest()}]}))
    alice = Path(files["root"]) / "alice"
    (alice / "checkpoints").symlink_to(outside.parent, target_is_directory=True)  # the whole folder
    (alice / "ckpt2").mkdir()
    (alice / "ckpt2" / "step-10").symlink_to(outside, target_is_directory=True)  # one step of it
    runner = HostileCluster("")
    guarded = GuardedRunner(runner, [files["root"]], USER)
    for folder in (alice / "checkpoints", alice / "ckpt2"):
        best, _ = newest_verified_checkpoint(guarded, str(folder))
        assert best is None, (folder, best)
    for step in (alice / "checkpoints" / "step-10", alice / "ckpt2" / "step-10"):
        check = verify_checkpoint(guarded, str(step))
        assert not check.ok, step
    assert not [a for a in runner.ran if a[0] == "sha256sum" or str(outside) in " ".join(a)], runner.ran
