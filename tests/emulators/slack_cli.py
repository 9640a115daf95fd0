"""Try Warden's Slack app and `warden serve` without Slack: run the Web API emulator by hand, and send
Warden signed requests as Slack would (the README's "against the emulator").

    python -m tests.emulators.slack_cli serve [--port 8099] [--users U0ALICE,U0BOB] [--channels C0ONCALL]
        serves the emulator (any bot token accepted), prints WARDEN_SLACK_API_URL=..., then one JSON
        line per message, update, modal and file upload Warden makes
    python -m tests.emulators.slack_cli command --app URL --user U0ALICE why is job 73412 hung?
        a signed /warden slash command to the app's request URL (http://HOST:PORT/slack/events)
    python -m tests.emulators.slack_cli press --app URL --emulator http://127.0.0.1:8099 --user U0BOB [--plan N]
        presses Approve on plan N's buttons (default the first) of the newest message with buttons

The signing secret is WARDEN_SLACK_SIGNING_SECRET, the variable Warden verifies with. Run from the
repository's root (the emulators live with the tests; they are not installed with Warden).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import httpx

from tests.emulators.slack import SlackEmulator
from tests.emulators.slack_requests import SlackRequests

__all__ = ["main"]


class _AnyTrigger(set):  # type: ignore[type-arg]
    """By hand, presses come from another process: accept every trigger id they carry."""

    def __contains__(self, item: object) -> bool:
        return True


def _serve(a: argparse.Namespace) -> None:
    emu = SlackEmulator(set(a.users.split(",")), channels=set(a.channels.split(",")), port=a.port)
    emu.trigger_ids = _AnyTrigger()
    with emu:
        print(f"WARDEN_SLACK_API_URL={emu.api_url}", flush=True)
        seen = {"message": 0, "update": 0, "view": 0, "upload": 0}
        try:
            while True:
                for kind, rows in (("message", emu.messages), ("update", emu.updates), ("view", emu.views),
                                   ("upload", emu.uploads)):
                    for row in list(rows)[seen[kind]:]:
                        seen[kind] += 1
                        shown = {k: v for k, v in row.items() if k != "at"}
                        if kind == "upload":
                            shown["files"] = [{**{k: v for k, v in f.items() if k != "data"}, "bytes": len(f["data"])}
                                              for f in row["files"]]
                        print(json.dumps({"kind": kind, **shown}, default=str), flush=True)
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass


def _requests(a: argparse.Namespace) -> SlackRequests:
    secret = os.environ.get("WARDEN_SLACK_SIGNING_SECRET")
    if not secret:
        sys.exit("slack_cli: set WARDEN_SLACK_SIGNING_SECRET to the secret `warden slack --http` verifies with")
    return SlackRequests(a.app, secret)


def _press(a: argparse.Namespace) -> httpx.Response:
    msgs: list[dict[str, Any]] = httpx.get(f"{a.emulator.rstrip('/')}/_emulator/messages", timeout=10).json()
    with_buttons = [m for m in msgs if any(b.get("type") == "actions" for b in m.get("blocks") or [])]
    if not with_buttons:
        sys.exit("slack_cli: no posted message has Approve / Deny buttons yet")
    msg = with_buttons[-1]
    rows = [b["block_id"] for b in msg["blocks"] if b.get("type") == "actions"]
    if not 1 <= a.plan <= len(rows):
        sys.exit(f"slack_cli: the newest message has buttons for {len(rows)} plan(s)")
    return _requests(a).press(msg, "warden_approve", user_id=a.user, block_id=rows[a.plan - 1])


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run one of serve, command or press (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m tests.emulators.slack_cli", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("serve", help="run the Slack Web API emulator")
    s.add_argument("--port", type=int, default=8099)
    s.add_argument("--users", default="U0ALICE,U0BOB,U0EVE")
    s.add_argument("--channels", default="C0WARDEN,C0ONCALL")
    c = sub.add_parser("command", help="send a signed /warden slash command")
    c.add_argument("--app", required=True, help="the app's request URL, http://HOST:PORT/slack/events")
    c.add_argument("--user", required=True)
    c.add_argument("--channel", default="C0WARDEN")
    c.add_argument("text", nargs="+")
    p = sub.add_parser("press", help="press Approve on the newest message with buttons")
    p.add_argument("--app", required=True)
    p.add_argument("--emulator", required=True, help="the emulator's base URL, http://127.0.0.1:PORT")
    p.add_argument("--user", required=True)
    p.add_argument("--plan", type=int, default=1, help="which plan's buttons, counted from the top")
    a = ap.parse_args(argv)
    if a.what == "serve":
        _serve(a)
        return
    r = _requests(a).command(" ".join(a.text), user_id=a.user, channel_id=a.channel) if a.what == "command" \
        else _press(a)
    print(f"HTTP {r.status_code} {r.text[:200]}")
    if r.status_code >= 400:
        sys.exit(1)


if __name__ == "__main__":
    main()
