"""The README's way of trying the Slack app by hand: the emulator run as a process
(tests/emulators/slack_cli.py serve), a signed /warden command and an Approve press sent with the
same tool, Warden's Slack app in HTTP mode over a bundled incident answering in between."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from agent.runbooks.target import Target
from tests.emulators.slack_cli import main
from tests.emulators.uvicorn_thread import serving

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
SECRET = "c4ca4238a0b923820dcc509a6f75849b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reader(proc: subprocess.Popen) -> queue.Queue:
    """The emulator's stdout, line by line, read on a thread (a silent emulator cannot hang the test)."""
    q: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [q.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    return q


def _lines(q: queue.Queue, want: str, timeout: float = 60) -> list[dict]:
    """JSON lines the emulator printed, read until one contains ``want``."""
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = q.get(timeout=left)
        except queue.Empty:
            break
        if line.startswith("{"):
            out.append(json.loads(line))
            if want in line:
                return out
    raise AssertionError(f"the emulator printed no line with {want!r}; got {out}")


def test_emulator_by_hand_command_and_press(tmp_path, monkeypatch, capsys):
    from agent.cli.slack import slack_asgi

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"approvers": {"bob": ["oncall"]},
                                                      "slack_approvers": {"U0BOB": "bob"}}))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.emulators.slack_cli", "serve", "--port", str(port)],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    try:
        lines = _reader(proc)
        assert lines.get(timeout=30).strip() == f"WARDEN_SLACK_API_URL=http://127.0.0.1:{port}/api/"
        for k, v in {"WARDEN_HOME": str(home), "WARDEN_SLACK_API_URL": f"http://127.0.0.1:{port}/api/",
                     "WARDEN_SLACK_TOKEN": "xoxb-anything", "WARDEN_SLACK_SIGNING_SECRET": SECRET}.items():
            monkeypatch.setenv(k, v)
        _, asgi = slack_asgi(Target.of(snapshot=INCIDENT), http=True, images=False)
        with serving(asgi) as url:
            main(["command", "--app", f"{url}/slack/events", "--user", "U0ALICE", "why", "is", "job", "73412", "hung?"])
            answer = _lines(lines, "gpu_hardware_fault")[-1]
            assert answer["kind"] == "message" and answer["thread_ts"]
            main(["press", "--app", f"{url}/slack/events", "--emulator", f"http://127.0.0.1:{port}", "--user", "U0BOB"])
            approved = _lines(lines, "Approved by")[-1]
            assert approved["thread_ts"] == answer["thread_ts"] and "<@U0BOB>" in approved["text"]
        assert capsys.readouterr().out.count("HTTP 200") == 2
    finally:
        proc.terminate()
        proc.wait(10)
