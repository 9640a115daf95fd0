"""notify_owner's message names the newest checkpoint a job logged (typed CheckpointEvent: its
``path``), when no resubmission proposes one; found when the sandbox's metadata-storm runbook
drafted a notification and crashed on the old ``fields`` dict."""

from __future__ import annotations

from datetime import datetime, timezone

from agent.notify import draft_message
from tools.facts import Facts
from tools.models.findings import ActionSpec
from tools.models.logs import CheckpointEvent


def test_checkpoint_from_the_job_log_is_quoted():
    ev = CheckpointEvent(kind="checkpoint_saved", job="4242", path="/scratch/run/ckpt/step_20", step=20,
                         file="logs/4242/train.out", line=7, message="saved checkpoint step_20")
    facts = Facts(captured_at=datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc), job_log_events=[ev])
    text = draft_message(ActionSpec(type="notify_owner", job="4242"), facts, None)
    assert "Checkpoint to resume from: /scratch/run/ckpt/step_20 (newest saved per the job log" in text
