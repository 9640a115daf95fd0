"""Block Kit rendering: cluster text cannot mention, broadcast, link or break out of a code block;
Slack's size limits hold; buttons carry the approval id and the whole plan hash."""

from __future__ import annotations

import json

from agent.slackapp import mrkdwn
from agent.slackapp.blocks import button_value, decided_blocks, diagnosis_blocks, fallback_text, parse_value
from tools.models.findings import ActionSpec, Diagnosis, Evidence, PlannedAction

HOSTILE = "job <!channel> @here <@U0BOSS> <https://evil.example|click> & ```x``` \x1b[31m @everyone"


def _diagnosis(n_plans: int = 1) -> Diagnosis:
    plans = [PlannedAction(spec=ActionSpec(type="drain_node", node=f"gpu{i:03d}", reason=HOSTILE),
                           commands=[["scontrol", "update", f"NodeName=gpu{i:03d}", "State=DRAIN", f"Reason=warden: {HOSTILE}"]],
                           plan_hash="a" * 64, reversibility="reversible", description=f"Drain gpu{i:03d}")
             for i in range(n_plans)]
    return Diagnosis(question=HOSTILE, root_cause="gpu_hardware_fault", culprits=["node:gpu007"], confidence=0.9,
                     summary=HOSTILE, evidence=[Evidence(text=HOSTILE, file="kernel/gpu007.log", line=3)],
                     proposed_actions=plans, run_id="r1")


def test_mrkdwn_escapes_controls_and_defuses_broadcasts():
    out = mrkdwn.text(HOSTILE)
    assert "<" not in out and ">" not in out and "&lt;!channel&gt;" in out and "&amp;" in out
    assert "@here" not in out and "@everyone" not in out and "@\u2060here" in out
    assert "\x1b" not in out and "\\x1b" in out
    assert "```" not in mrkdwn.code(HOSTILE)


def test_no_untrusted_markup_reaches_any_block():
    blocks = diagnosis_blocks(_diagnosis(), [], mode="observe")
    for b in blocks:
        texts = [b.get("text", {}).get("text", "")] + [e.get("text", "") for e in b.get("elements", [])]
        for t in texts:
            assert "<!" not in t and "<@" not in t and "<http" not in t and "@here" not in t, t
            assert t.count("```") % 2 == 0
    assert "<" not in fallback_text(_diagnosis())


def test_limits_hold_for_many_plans():
    blocks = diagnosis_blocks(_diagnosis(20), [], mode="observe")
    assert len(blocks) <= 50
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in blocks)
    assert "more plans" in blocks[-1]["elements"][0]["text"]


def test_button_value_round_trip_and_forgeries():
    v = button_value("3f9a1c2b7d10", "b" * 64)
    assert len(v) < 2000 and parse_value(v) == {"approval_id": "3f9a1c2b7d10", "plan_hash": "b" * 64}
    for bad in (None, "", "x", "[]", json.dumps({"approval_id": "a;b", "plan_hash": "c"}),
                json.dumps({"approval_id": 1, "plan_hash": "c"})):
        assert parse_value(bad) is None


def test_decided_replaces_only_that_plans_buttons():
    blocks = [{"type": "actions", "block_id": "plan:a1", "elements": []},
              {"type": "actions", "block_id": "plan:b2", "elements": []}]
    out = decided_blocks(blocks, "a1", "approved")
    assert out[0]["type"] == "context" and out[1] == blocks[1]
