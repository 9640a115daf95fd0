"""Every sandbox fault, end to end and live: inject → `diagnose_live` (real Slurm, Prometheus, files)
→ the proposed actions through agent/execute.py (policy, the tests' own approval, audit, execute,
verify) → clear → the sandbox left healthy (all nodes idle, no job, no Warden drain)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agent.execute import ActionOutcome
from agent.live.act import LiveRun, diagnose_live, live_specs
from agent.live.config import LiveConfig
from agent.live.session import sandbox_config
from sandbox import cluster, faults, jobs
from sandbox.layout import Layout
from tests.emulators.slack import SlackEmulator
from tests.emulators.smtp import SmtpSink
from tests.integration.live_helpers import Executor, cancel_jobs, wait_healthy
from tools.actions.notify_channels import Channels, Contact, NotifyConfig
from tools.models.findings import ActionSpec
from tools.sources.local import LocalSource


@pytest.fixture
def cfg(state_dir: Path) -> LiveConfig:
    return sandbox_config(state_dir)


@pytest.fixture
def runner(state_dir: Path, tmp_path: Path) -> LocalSource:
    """Runs Slurm commands against the sandbox; resubmitted batch scripts are written to tmp_path."""
    return LocalSource(env=cluster.env(state_dir), cwd=tmp_path)


def _diagnose(cfg: LiveConfig, runner: LocalSource, question: str) -> LiveRun:
    run = diagnose_live(cfg, question, runner=runner, audit=False)
    assert run.diagnosis is not None and not run.collector.failures, run.collector.failures
    return run


def _new_job(o: ActionOutcome) -> str | None:
    text = o.execution.outputs[-1] if o.execution and o.execution.outputs else ""
    m = re.search(r"\b(\d+)\b", text)
    return m.group(1) if m else None


def _executed(o: ActionOutcome) -> None:
    assert o.status == "executed", o.message
    assert o.verification is not None and o.verification.ok, o.verification


def _by_type(specs: list[ActionSpec]) -> dict[str, ActionSpec]:
    return {s.type: s for s in specs}


def _node_fault(name: str, question: str, cause: str, state_dir: Path, cfg: LiveConfig, runner: LocalSource,
                tmp_path: Path, *, expect_job: bool) -> None:
    """Shared flow of the node faults: drain the culprit node (approved), drain again (no harm),
    clear, resume it (only Warden's drain), healthy."""
    rec = faults.inject(name, state_dir)  # type: ignore[arg-type]
    ex: Executor | None = None
    new_jobs: list[str] = []
    try:
        run = _diagnose(cfg, runner, question.format(node=rec.node, job=rec.job))
        d = run.diagnosis
        assert d is not None and d.root_cause == cause, d.summary
        assert f"node:{rec.node}" in d.culprits and (not expect_job or f"job:{rec.job}" in d.culprits)
        specs = _by_type(live_specs(d, run.ctx.facts, cfg, runner))
        assert specs["drain_node"].node == rec.node
        ex = Executor.make(tmp_path, runner, run.ctx.facts)
        _executed(ex.run(specs["drain_node"]))
        again = ex.run(specs["drain_node"])  # idempotent: the same drain twice does no harm
        _executed(again)
        if "resubmit_from_checkpoint" in specs:
            spec = specs["resubmit_from_checkpoint"]
            assert rec.node in spec.exclude_nodes
            out = ex.run(spec)
            new_jobs.append(_new_job(out) or "")
            _executed(out)
            assert f"ExcNodeList={rec.node}" in out.verification.observed  # type: ignore[union-attr]
            twice = ex.run(spec)  # a second run finds the queued resubmission and submits nothing
            _executed(twice)
            assert twice.execution is not None and twice.execution.commands == []
    finally:
        cancel_jobs(LocalSource(env=cluster.env(state_dir)), new_jobs)
        faults.clear(name, state_dir)  # type: ignore[arg-type]
        if ex is not None and rec.node:
            _executed(ex.run(ActionSpec(type="resume_node", node=rec.node)))
    wait_healthy(state_dir, runner)


def test_gpu_xid79_drain_and_resubmit_elsewhere(state_dir, cfg, runner, tmp_path) -> None:
    _node_fault("gpu_xid79", "Job {job} has logged nothing for minutes. Why?", "gpu_hardware_fault",
                state_dir, cfg, runner, tmp_path, expect_job=True)


def test_node_unresponsive_drained(state_dir, cfg, runner, tmp_path) -> None:
    _node_fault("node_unresponsive", "Node {node} looks dead. What is wrong?", "node_unresponsive",
                state_dir, cfg, runner, tmp_path, expect_job=False)


def test_straggler_drained(state_dir, cfg, runner, tmp_path) -> None:
    _node_fault("straggler", "Job {job} trains slower than it should. Why?", "straggler_node",
                state_dir, cfg, runner, tmp_path, expect_job=True)


def _notify_fault(name: str, question: str, cause: str, state_dir: Path, cfg: LiveConfig, runner: LocalSource,
                  tmp_path: Path, *, wait_state: str | None = None, culprit_job: bool = True) -> None:
    """Faults whose remedy is the owner's (notify_owner: read-only, allowed without approval): the
    owner (the job's Slurm user) is found in the site directory and gets one e-mail through a real
    local SMTP server (aiosmtpd) and one Slack DM through the Web API emulator, each naming the job
    and the evidence."""
    rec = faults.inject(name, state_dir)  # type: ignore[arg-type]
    smtp, slack = SmtpSink(), SlackEmulator({"U0SANDBOX1"}, token="xoxb-sandbox")
    smtp.__enter__()
    slack.__enter__()
    try:
        if wait_state:
            jobs.wait_job_state(Layout.of(state_dir), str(rec.job), {wait_state}, timeout_s=150)
        run = _diagnose(cfg, runner, question.format(job=rec.job))
        d = run.diagnosis
        assert d is not None and d.root_cause == cause, (d.root_cause, d.summary, [f.message for f in d.findings])
        if culprit_job:
            assert f"job:{rec.job}" in d.culprits
        specs = _by_type(live_specs(d, run.ctx.facts, cfg, runner))
        assert specs["notify_owner"].job == rec.job
        owner = run.ctx.facts.job(rec.job).user or run.ctx.facts.acct_job(rec.job).user  # type: ignore[union-attr]
        contact = Contact(slack="U0SANDBOX1", email=f"{owner}@sandbox.example")
        for channel in ("email", "slack"):
            (tmp_path / channel).mkdir()
            ex = Executor.make(tmp_path / channel, runner, run.ctx.facts)
            notify = NotifyConfig(channels=[channel], smtp_host="127.0.0.1", smtp_port=smtp.port,
                                  directory={owner: contact})
            ex.setup.notify, ex.setup.channels, ex.setup.diagnosis = notify, Channels(notify), d
            os.environ["WARDEN_SLACK_API_URL"], os.environ["WARDEN_SLACK_TOKEN"] = slack.api_url, "xoxb-sandbox"
            out = ex.run(specs["notify_owner"])
            _executed(out)
            assert out.decision is not None and out.decision.decision == "allow"
        assert len(smtp.messages) == 1 and len(slack.messages) == 1
        mail = smtp.messages[0][1].get_content()
        for text in (mail, slack.messages[0]["text"]):
            assert f"job {rec.job}" in text and "Evidence:" in text and "Checkpoint to resume from:" in text
    finally:
        os.environ.pop("WARDEN_SLACK_API_URL", None)
        os.environ.pop("WARDEN_SLACK_TOKEN", None)
        slack.__exit__()
        smtp.__exit__()
        faults.clear(name, state_dir)  # type: ignore[arg-type]
    wait_healthy(state_dir, runner)


def test_gpu_oom_owner_notified(state_dir, cfg, runner, tmp_path) -> None:
    _notify_fault("gpu_oom", "Job {job} failed. Why?", "gpu_oom", state_dir, cfg, runner, tmp_path)


def test_metadata_storm_owner_notified(state_dir, cfg, runner, tmp_path) -> None:
    _notify_fault("metadata_storm", "Job {job} crawls and ls on /scratch hangs. Why?", "metadata_wall", state_dir, cfg,
                  runner, tmp_path)


def test_timeout_without_checkpoint(state_dir, cfg, runner, tmp_path) -> None:
    _notify_fault("timeout_without_checkpoint", "Job {job} ended. Why, and what should be done?",
                  "timeout_without_checkpoint", state_dir, cfg, runner, tmp_path, wait_state="TIMEOUT")


def test_pending_forever_update_job(state_dir, cfg, runner, tmp_path) -> None:
    rec = faults.inject("pending_forever", state_dir)
    try:
        run = _diagnose(cfg, runner, f"Job {rec.job} has been pending since it was submitted. Why?")
        d = run.diagnosis
        assert d is not None and d.root_cause == "scheduler_wait" and f"job:{rec.job}" in d.culprits
        spec = _by_type(live_specs(d, run.ctx.facts, cfg, runner))["update_job"]
        assert spec.job == rec.job and spec.num_nodes == len(Layout.of(state_dir).load_config().nodes)
        ex = Executor.make(tmp_path, runner, run.ctx.facts)
        _executed(ex.run(spec))  # verify reads NumNodes=4 back from scontrol show job
        _executed(ex.run(spec))  # the same update twice: same state, verified again
    finally:
        faults.clear("pending_forever", state_dir)
    wait_healthy(state_dir, runner)


def test_checkpoint_corrupt_resubmits_from_verified_checkpoint(state_dir, cfg, runner, tmp_path) -> None:
    rec = faults.inject("checkpoint_corrupt", state_dir)
    new: list[str] = []
    try:
        run = _diagnose(cfg, runner, f"Job {rec.job} failed right after it started. Why?")
        d = run.diagnosis
        assert d is not None and d.root_cause == "checkpoint_corrupt" and f"job:{rec.job}" in d.culprits
        checks: dict = {}
        spec = _by_type(live_specs(d, run.ctx.facts, cfg, runner, checks))["resubmit_from_checkpoint"]
        corrupt = str(rec.files[0].parent)
        # The truncated newest checkpoint is never proposed (its load failed, or its sha256/size check
        # fails); the next older one is, and it verifies against its manifest.
        assert corrupt not in [c.path for c in checks[rec.job] if c.ok]
        assert spec.checkpoint and spec.checkpoint != corrupt and spec.checkpoint.endswith("step_000004")
        assert any(c.path == spec.checkpoint and c.ok for c in checks[rec.job])
        ex = Executor.make(tmp_path, runner, run.ctx.facts)
        out = ex.run(spec)
        new.append(_new_job(out) or "")
        _executed(out)
        log = tmp_path / f"slurm-{new[0]}.out"
        jobs.wait_for_text(log, r"resumed from checkpoint .*step_000004 step=4", timeout_s=60)
    finally:
        cancel_jobs(LocalSource(env=cluster.env(state_dir)), new)
        faults.clear("checkpoint_corrupt", state_dir)
    wait_healthy(state_dir, runner)
