"""The Slack app in HTTP mode, end to end over real HTTP: signed slash commands, mentions and
button presses sent to Warden's /slack/events (tests/emulators/slack_requests.py), Warden's posts
recorded by the local Slack Web API emulator (Slack itself cannot be reached from here).

Target: a bundled incident (Xid 79 on gpu007), so the approval flow is real (policy, approval store,
audit log) and execution is a dry run (nothing runs against a recording)."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import yaml

from agent.audit import AuditLog
from agent.runbooks.target import Target
from tests.emulators.slack import SlackEmulator
from tests.emulators.slack_requests import SlackRequests
from tests.emulators.uvicorn_thread import serving

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
SECRET = "8f14e45fceea167a5a36dedd4bea2543"
ALICE, BOB, EVE = "U0ALICE", "U0BOB", "U0EVE"


def _config(home: Path, ttl: float = 3600) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({
        "approvers": {"alice": ["oncall"], "bob": ["oncall"]}, "approval_ttl_s": ttl,
        "slack_approvers": {ALICE: "alice", BOB: "bob"}}))


@pytest.fixture
def slack(request, tmp_path, monkeypatch):
    """(emulator, requests sender) around a running Slack app over the incident; the report's pictures
    are uploaded only when the test asks (``parametrize("slack", [{"images": True}], indirect=True)``),
    so no answer thread outlives its test drawing them."""
    from agent.cli.slack import slack_asgi

    home = tmp_path / "home"
    _config(home, ttl=float(getattr(slack, "ttl", 3600)))
    monkeypatch.setenv("WARDEN_HOME", str(home))
    with SlackEmulator({ALICE, BOB, EVE}, token="xoxb-test") as emu:
        monkeypatch.setenv("WARDEN_SLACK_API_URL", emu.api_url)
        monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-test")
        monkeypatch.setenv("WARDEN_SLACK_SIGNING_SECRET", SECRET)
        _, asgi = slack_asgi(Target.of(snapshot=INCIDENT), http=True,
                             images=bool(getattr(request, "param", {}).get("images")))
        with serving(asgi) as url:
            yield emu, SlackRequests(f"{url}/slack/events", SECRET, emu), home


def _answer(emu: SlackEmulator) -> dict:
    """The posted answer as first posted (a copy: chat.update later replaces its buttons, and a second
    press comes from a client that still shows them)."""
    m = emu.wait_for(lambda m: m.get("thread_ts") and m.get("blocks") and m["blocks"][0]["type"] == "header", 60)
    return copy.deepcopy(m)


def _plan_ids(msg: dict) -> dict[str, str]:
    """action type (from the plan section above each button row) -> block_id of its buttons."""
    out, last = {}, ""
    for b in msg["blocks"]:
        if b["type"] == "section":
            last = b["text"]["text"]
        if b["type"] == "actions":
            out["resubmit" if "irreversible" in last else "drain" if "rain" in last else last] = b["block_id"]
    return out


def _reply(emu: SlackEmulator, thread: str, needle: str, timeout: float = 30) -> str:
    m = emu.wait_for(lambda m: m.get("thread_ts") == thread and needle in (m.get("text") or ""), timeout)
    return m["text"]


def test_slash_command_answers_in_thread_with_diagnosis_and_buttons(slack):
    emu, req, _ = slack
    r = req.command("why is job 73412 hung?", user_id=ALICE)
    assert r.status_code == 200
    parent = emu.wait_for(lambda m: "asked" in (m.get("text") or ""))
    assert parent["thread_ts"] is None and "<@U0ALICE>" in parent["text"]
    ans = _answer(emu)
    assert ans["thread_ts"] == parent["ts"]
    text = "\n".join(str(b) for b in ans["blocks"])
    assert "gpu_hardware_fault" in text and "node:gpu007" in text and "GPU-h lost" in text
    assert "$ scontrol update" in text  # the exact commands, quoted
    buttons = [el for b in ans["blocks"] if b["type"] == "actions" for el in b["elements"]]
    assert {el["action_id"] for el in buttons} == {"warden_approve", "warden_deny"}
    assert all(len(json.loads(el["value"])["plan_hash"]) == 64 for el in buttons)  # the whole hash


def _upload(emu: SlackEmulator, thread: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for u in list(emu.uploads):
            if u["thread_ts"] == thread:
                return u
        time.sleep(0.05)
    raise AssertionError(f"no file upload in thread {thread}; uploads: {emu.uploads}")


@pytest.mark.parametrize("slack", [{"images": True}], indirect=True)
def test_answer_uploads_the_report_pictures_into_its_thread(slack):
    emu, req, home = slack
    req.command("why is job 73412 hung?", user_id=ALICE)
    ans = _answer(emu)
    up = _upload(emu, ans["thread_ts"])
    assert up["channel"] == ans["channel"]
    assert [f["filename"] for f in up["files"]] == ["gpu-heatmap.png", "timeline.png"]
    assert all(f["data"].startswith(b"\x89PNG\r\n\x1a\n") and len(f["data"]) > 5000 for f in up["files"])
    assert "DCGM per node and GPU" in up["files"][0]["title"]
    run = [b for b in ans["blocks"] if b["type"] == "context"][-1]["elements"][0]["text"]
    report = next((home / "reports").iterdir())
    assert report.name[:8] in run and (report / "report.html").is_file()  # the report of this answer's run
    assert f"{report}/report.html" in up["comment"] and "`gpu-heatmap.png`" in up["comment"]


def test_presses_are_authorised_by_slack_user_id(slack):
    emu, req, home = slack
    req.command("why is job 73412 hung?", user_id=ALICE)
    ans = _answer(emu)
    ids = _plan_ids(ans)
    thread = ans["thread_ts"]
    # the requester may not approve her own irreversible resubmission
    req.press(ans, "warden_approve", user_id=ALICE, block_id=ids["resubmit"])
    assert "cannot approve" in _reply(emu, thread, "Refused for <@U0ALICE>")
    # a Slack user no slack_approvers entry names is nobody's approver
    req.press(ans, "warden_approve", user_id=EVE, block_id=ids["drain"])
    assert "not an allowed approver" in _reply(emu, thread, "Refused for <@U0EVE>")
    # an approver: approved, re-decided by policy, dry run (a recording), message updated
    req.press(ans, "warden_approve", user_id=BOB, block_id=ids["drain"])
    done = _reply(emu, thread, "Approved by <@U0BOB>")
    assert "dry run" in done
    deadline = time.monotonic() + 10  # the buttons are replaced right after the reply
    while not emu.updates and time.monotonic() < deadline:
        time.sleep(0.05)
    upd = emu.updates[-1]
    assert upd["ts"] == ans["ts"] and any(b.get("block_id", "").startswith("decided:") for b in upd["blocks"])
    # the same button again: the approval is single-use
    req.press(ans, "warden_approve", user_id=BOB, block_id=ids["drain"])
    assert "already approved" in _reply(emu, thread, "Refused for <@U0BOB>")
    events = [r.payload.get("event") for r in AuditLog(home / "audit.db").records() if r.kind == "approval"]
    assert events.count("refused") >= 3 and "approve" in events


def test_deny_asks_why_in_a_modal_and_records_the_reason(slack):
    emu, req, home = slack
    req.command("why is job 73412 hung?", user_id=ALICE)
    ans = _answer(emu)
    req.press(ans, "warden_deny", user_id=BOB, block_id=_plan_ids(ans)["resubmit"])
    deadline = time.monotonic() + 10
    while not emu.views and time.monotonic() < deadline:
        time.sleep(0.05)
    view = emu.views[-1]["view"]
    assert view["callback_id"] == "warden_deny_reason"
    req.submit_view(view, {"reason": {"reason": "checkpoint is from before the bad node"}}, user_id=BOB)
    assert "checkpoint is from before" in _reply(emu, ans["thread_ts"], "Denied by <@U0BOB>")
    denials = [r.payload for r in AuditLog(home / "audit.db").records() if r.payload.get("event") == "deny"]
    assert denials and denials[-1]["reason"] == "checkpoint is from before the bad node"


def test_mention_is_answered_in_its_thread(slack):
    emu, req, _ = slack
    req.mention("is gpu007 healthy?", user_id=BOB, ts="1700000000.000100")
    ans = _answer(emu)
    assert ans["thread_ts"] == "1700000000.000100"


def test_unsigned_or_stale_requests_are_refused(slack):
    emu, req, _ = slack
    forged = SlackRequests(req.url, "not-the-secret")
    assert forged.command("drain everything", user_id=EVE).status_code == 401
    assert req.command("old", user_id=ALICE, ts=int(time.time()) - 3600).status_code == 401
    time.sleep(0.5)
    assert emu.messages == []


def test_expired_approval_is_refused_in_the_thread(tmp_path, monkeypatch, slack):
    emu, req, home = slack
    _config(home, ttl=2)
    req.command("why is job 73412 hung?", user_id=ALICE)
    ans = _answer(emu)
    time.sleep(2.2)
    req.press(ans, "warden_approve", user_id=BOB, block_id=_plan_ids(ans)["drain"])
    assert "expired" in _reply(emu, ans["thread_ts"], "Refused for <@U0BOB>")
