"""notify_owner end to end on a bundled incident: the owner resolved from Slurm's job user through
the site directory, the message drafted from the Diagnosis, delivered to a real local SMTP server
(aiosmtpd), to a Slack Web API emulator and to an HTTP webhook receiver, and verified as accepted."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from agent.approvals import ApprovalStore
from agent.audit import AuditLog
from agent.diagnose import diagnose_path
from agent.execute import ExecutionSetup
from policies import PolicyEngine
from tests.emulators.kube_api import KubeApi
from tests.emulators.slack import SlackEmulator
from tests.emulators.smtp import SmtpSink
from tests.emulators.webhook import WebhookReceiver
from tools.actions.notify_channels import Channels, Contact, NotifyConfig
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
CKPT = "/lustre/scratch/alice/llm13b/ckpt/step_032000"  # the resubmission the Diagnosis proposes
JOB = "73412"


@pytest.fixture(scope="module")
def diagnosis():
    return diagnose_path(INCIDENT, audit=False)


@pytest.fixture(scope="module")
def facts():
    return ReadContext.from_snapshot(INCIDENT / "snapshot").facts


def _setup(tmp_path: Path, facts, diagnosis, notify: NotifyConfig, kube=None) -> tuple[ExecutionSetup, AuditLog]:
    audit = AuditLog(tmp_path / "audit.db")
    approvals = ApprovalStore(tmp_path / "approvals.db", {"bob"}, audit=audit)
    return ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="warden-bot",
                          dry_run=False, facts=facts, channels=Channels(notify), notify=notify, diagnosis=diagnosis,
                          condition=diagnosis.root_cause, kube=kube,
                          clock=lambda: datetime(2026, 11, 29, 10, 20, tzinfo=timezone.utc)), audit


def _names_job_evidence_checkpoint(text: str, diagnosis) -> None:
    assert f"job {JOB}" in text
    assert "Evidence:" in text and diagnosis.evidence[0].text.split()[0] in text
    assert f"Checkpoint to resume from: {CKPT}" in text


def test_email_to_local_smtp_names_job_evidence_and_checkpoint(tmp_path, facts, diagnosis):
    assert facts.job(JOB).user == "alice"
    with SmtpSink() as smtp:
        notify = NotifyConfig(channels=["email"], smtp_host="127.0.0.1", smtp_port=smtp.port,
                              directory={"alice": Contact(email="alice@hpc.example.org")})
        setup, audit = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", job=JOB, reason="GPU fault on gpu007 ended your job"))
        assert out.status == "executed", out.message
        assert out.verification.ok and "Message-ID" in out.verification.observed
        assert len(smtp.messages) == 1
        rcpts, msg = smtp.messages[0]
        assert rcpts == ["alice@hpc.example.org"]
        assert msg["Subject"].startswith(f"Warden: job {JOB}")
        _names_job_evidence_checkpoint(msg.get_content(), diagnosis)
    assert audit.verify().ok


def test_slack_dm_through_web_api_emulator(tmp_path, facts, diagnosis, monkeypatch):
    with SlackEmulator({"U012AB3CD"}, token="xoxb-test") as slack:
        monkeypatch.setenv("WARDEN_SLACK_API_URL", slack.api_url)
        monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-test")
        notify = NotifyConfig(channels=["slack", "email"], directory={"alice": Contact(slack="U012AB3CD")})
        setup, _ = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", job=JOB, reason="GPU fault on gpu007 ended your job"))
        assert out.status == "executed", out.message
        assert [m["user"] for m in slack.messages] == ["U012AB3CD"]
        assert [c for c, _ in slack.calls] == ["conversations.open", "chat.postMessage"]
        _names_job_evidence_checkpoint(slack.messages[0]["text"], diagnosis)
        assert out.plan.commands == [["slack", "chat.postMessage", "channel=<DM of U012AB3CD>"]]


def test_slack_refusal_is_a_failed_delivery_not_a_success(tmp_path, facts, diagnosis, monkeypatch):
    with SlackEmulator({"U012AB3CD"}, token="xoxb-right") as slack:
        monkeypatch.setenv("WARDEN_SLACK_API_URL", slack.api_url)
        monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-wrong")
        notify = NotifyConfig(channels=["slack"], directory={"alice": Contact(slack="U012AB3CD")})
        setup, _ = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", job=JOB))
        assert out.status == "failed" and "invalid_auth" in out.message and slack.messages == []


def test_webhook_receiver_gets_the_message(tmp_path, facts, diagnosis):
    with WebhookReceiver() as hook:
        notify = NotifyConfig(channels=["webhook"], webhook_url=hook.url, directory={"alice": Contact(webhook=True)})
        setup, _ = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", job=JOB))
        assert out.status == "executed" and out.verification.observed.endswith("HTTP 200")
        assert hook.bodies[0]["owner"] == "alice" and CKPT in hook.bodies[0]["text"]
    with WebhookReceiver(status=503) as hook:
        notify = NotifyConfig(channels=["webhook"], webhook_url=hook.url, directory={"alice": Contact(webhook=True)})
        setup, _ = _setup(tmp_path / "b", facts, diagnosis, notify) if (tmp_path / "b").mkdir() is None else None
        assert setup.propose(ActionSpec(type="notify_owner", job=JOB)).status == "failed"


def test_missing_mapping_is_a_clear_refusal_not_a_silent_no_op(tmp_path, facts, diagnosis):
    with SmtpSink() as smtp:
        notify = NotifyConfig(channels=["email"], smtp_host="127.0.0.1", smtp_port=smtp.port,
                              directory={"bob": Contact(email="bob@hpc.example.org")})
        setup, audit = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", job=JOB))
        assert out.status == "refused" and out.refusal.bound == "no-owner-contact"
        assert out.message == "notify_owner: no contact for 'alice' in [notify.directory]; nothing sent"
        assert smtp.messages == []
    decision = [r for r in audit.records() if r.kind == "policy_decision"][-1]
    assert decision.payload["refusal"]["bound"] == "no-owner-contact"


def test_pod_owner_from_namespace_label(tmp_path, facts, diagnosis):
    with KubeApi(namespaces={"ml-team": {"owner": "alice"}}) as api, SmtpSink() as smtp:
        notify = NotifyConfig(channels=["email"], smtp_host="127.0.0.1", smtp_port=smtp.port,
                              directory={"alice": Contact(email="alice@hpc.example.org")})
        setup, _ = _setup(tmp_path, None, diagnosis, notify, kube=api.client())
        out = setup.propose(ActionSpec(type="notify_owner", pod="resnet-train-7d9c6b5f4-x2kqp", namespace="ml-team"))
        assert out.status == "executed", out.message
        assert smtp.messages[0][0] == ["alice@hpc.example.org"]
        missing = setup.propose(ActionSpec(type="notify_owner", pod="x", namespace="serving"))
        assert missing.status == "refused" and "namespaces" not in missing.message.lower() or "serving" in missing.message


def test_the_team_that_runs_a_server_host_is_told_by_email(tmp_path, facts, diagnosis):
    # A storage server is no Slurm node: its owners come from [notify] node_owners (first matching pattern),
    # a host no pattern matches goes to the on-call name, and with neither nothing is sent.
    with SmtpSink() as smtp:
        notify = NotifyConfig(channels=["email"], smtp_host="127.0.0.1", smtp_port=smtp.port,
                              node_owners={"oss*": "storage-oncall", "slurmctl*": "hpc-admins"}, oncall="hpc-admins",
                              directory={"storage-oncall": Contact(email="storage@hpc.example.org"),
                                         "hpc-admins": Contact(email="admins@hpc.example.org")})
        setup, audit = _setup(tmp_path, facts, diagnosis, notify)
        out = setup.propose(ActionSpec(type="notify_owner", node="oss04", reason="OST000b has no failover NID"))
        assert out.status == "executed", out.message
        out = setup.propose(ActionSpec(type="notify_owner", node="mds01", reason="MDT0000 overloaded"))
        assert out.status == "executed", out.message
        assert [r for r, _ in smtp.messages] == [["storage@hpc.example.org"], ["admins@hpc.example.org"]]
        assert smtp.messages[0][1]["Subject"].startswith("Warden: oss04")
    assert audit.verify().ok
    (tmp_path / "none").mkdir()
    setup, _ = _setup(tmp_path / "none", facts, diagnosis, NotifyConfig(channels=["email"]))
    out = setup.propose(ActionSpec(type="notify_owner", node="oss04", reason="x"))
    assert out.status != "executed" and "no [notify] node_owners pattern matches it" in out.message
