"""Socket Mode (the default): bolt's handler connects to the emulated Socket Mode endpoint
(tests/emulators/slack_socket.py, handed out by the Web API emulator's apps.connections.open), a
slash command and a button press arrive as envelopes, Warden acks each and answers in Slack."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import yaml

from agent.runbooks.target import Target
from agent.slackapp.app import socket_mode_handler
from agent.slackapp.client import SlackCredentials
from agent.slackapp.http import build_slack
from tests.emulators.slack import SlackEmulator
from tests.emulators.slack_socket import SocketModeServer

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


def test_socket_mode_command_and_press(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"approvers": {"bob": ["oncall"]},
                                                      "slack_approvers": {"U0BOB": "bob"}}))
    monkeypatch.setenv("WARDEN_HOME", str(home))
    ws = SocketModeServer()
    with SlackEmulator({"U0ALICE", "U0BOB"}, token="xoxb-s", app_token="xapp-1-s", socket_url=ws.url) as emu:
        monkeypatch.setenv("WARDEN_SLACK_API_URL", emu.api_url)
        monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-s")
        monkeypatch.setenv("WARDEN_SLACK_APP_TOKEN", "xapp-1-s")
        monkeypatch.delenv("WARDEN_SLACK_SIGNING_SECRET", raising=False)
        app, _ = build_slack(Target.of(snapshot=INCIDENT), http=False, images=False)
        handler = socket_mode_handler(app, SlackCredentials.from_env(http=False))
        handler.connect()
        try:
            ws.push("slash_commands", {"command": "/warden", "text": "why is job 73412 hung?", "user_id": "U0ALICE",
                                       "channel_id": "C0WARDEN", "team_id": "T0WARDEN", "api_app_id": "A0WARDEN",
                                       "trigger_id": "1.2.x", "response_url": "http://127.0.0.1:9/r"})
            ans = copy.deepcopy(emu.wait_for(lambda m: m.get("blocks") and m.get("thread_ts"), 60))
            assert "gpu_hardware_fault" in ans["text"]
            button = next(el for b in ans["blocks"] if b["type"] == "actions" for el in b["elements"]
                          if el["action_id"] == "warden_approve")
            ws.push("interactive", {"type": "block_actions", "user": {"id": "U0BOB"}, "team": {"id": "T0WARDEN"},
                                    "api_app_id": "A0WARDEN", "trigger_id": "1.2.y",
                                    "container": {"type": "message", "message_ts": ans["ts"], "channel_id": "C0WARDEN"},
                                    "channel": {"id": "C0WARDEN"}, "message": {**ans, "type": "message"},
                                    "actions": [{"action_id": "warden_approve", "type": "button",
                                                 "value": button["value"], "action_ts": f"{time.time():.6f}"}]})
            done = emu.wait_for(lambda m: m.get("thread_ts") == ans["thread_ts"] and "Approved by" in (m["text"] or ""),
                                60)
            assert "<@U0BOB>" in done["text"]
            assert [c for c, _ in emu.calls].count("apps.connections.open") >= 1
        finally:
            handler.close()
            ws.close()


def test_socket_mode_needs_an_app_token(monkeypatch):
    monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-s")
    monkeypatch.delenv("WARDEN_SLACK_APP_TOKEN", raising=False)
    from typer.testing import CliRunner

    from agent.cli.app import app

    r = CliRunner().invoke(app, ["slack", "--snapshot", str(INCIDENT)])
    assert r.exit_code == 2 and "WARDEN_SLACK_APP_TOKEN" in r.output
