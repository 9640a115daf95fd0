"""`warden audit anchor` to each sink, over real sockets: a file outside $WARDEN_HOME, syslog (a UDP
socket and a Unix datagram socket, as journald's /dev/log is), a webhook (a loopback HTTP server);
`verify` reading the file back; the configured secret instead of the key file."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.audit_anchor import AnchorError, last_anchor
from agent.cli.app import app
from agent.settings import WardenSettings

runner = CliRunner()


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("WARDEN_HOME", str(h))
    log = WardenSettings.load().open_audit()
    log.append("execution", {"argv": ["scontrol", "update", "NodeName=gpu007", "State=DRAIN"]}, run_id="r")
    log.close()
    return h


def cli(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output
    return r.exit_code, " ".join(r.output.split())


def one_line(*args: str) -> str:
    r = runner.invoke(app, list(args))
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


def test_file_anchor_is_read_back_by_verify(home: Path, tmp_path: Path) -> None:
    f = tmp_path / "anchors" / "a.jsonl"
    code, out = cli("audit", "anchor", "--to", f"file:{f}")
    assert code == 0 and f"file:{f}" in out, out
    rec = json.loads(f.read_text().splitlines()[-1])
    assert rec["seq"] == 1 and len(rec["hash"]) == 64 and rec["db"] == str(home / "audit.db") and rec["log_id"]
    code, out = cli("audit", "verify", "--anchor-file", str(f))
    assert code == 0 and f"matches {f} (seq 1)" in out, out
    code, out = cli("audit", "verify", "--anchor", f"1:{rec['hash']}")
    assert code == 0 and "matches --anchor (seq 1)" in out, out
    code, out = cli("audit", "verify", "--anchor", f"1:{'0' * 64}")
    assert code == 1 and "does not match --anchor" in out, out


def test_anchor_records_of_other_logs_are_skipped_and_damaged_ones_reported(home: Path, tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    cli("audit", "anchor", "--to", f"file:{f}")
    with f.open("a") as out:
        out.write(json.dumps({"db": "/elsewhere/audit.db", "seq": 9, "hash": "x", "log_id": "y", "at": "z"}) + "\n")
    got = last_anchor(f, home / "audit.db")
    assert got is not None and got.seq == 1
    with f.open("a") as out:
        out.write("garbage\n")
    with pytest.raises(AnchorError, match="is not an anchor"):
        last_anchor(f, home / "audit.db")


def test_an_anchor_file_inside_warden_home_is_refused(home: Path) -> None:
    assert "inside $WARDEN_HOME" in one_line("audit", "anchor", "--to", f"file:{home / 'anchors.jsonl'}")
    (home / "config.yaml").write_text(f"audit_anchor: {{file: {home / 'x' / 'a.jsonl'}}}\n")
    line = one_line("audit", "verify")
    assert "config.yaml" in line and "audit_anchor.file" in line and "inside $WARDEN_HOME" in line
    (home / "config.yaml").write_text("{}\n")
    assert "no anchor sink" in one_line("audit", "anchor")
    assert "expected file:PATH" in one_line("audit", "anchor", "--to", "ftp:x")


def test_syslog_over_udp(home: Path) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(10)
    port = sock.getsockname()[1]
    code, out = cli("audit", "anchor", "--to", f"syslog:127.0.0.1:{port}")
    assert code == 0 and f"syslog:127.0.0.1:{port}" in out, out
    data = sock.recv(65536).decode()
    sock.close()
    assert data.startswith("<86>warden-audit: {")  # authpriv.info, RFC 3164 as rsyslog/journald take it
    rec = json.loads(data.split(": ", 1)[1].rstrip("\x00"))
    assert rec["seq"] == 1 and rec["db"] == str(home / "audit.db")


def test_syslog_on_a_unix_datagram_socket(home: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "log.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(10)
    code, out = cli("audit", "anchor", "--to", f"syslog:{path}")
    assert code == 0, out
    assert b'warden-audit: {"at":' in sock.recv(65536)
    sock.close()
    line = one_line("audit", "anchor", "--to", f"syslog:{tmp_path / 'absent.sock'}")
    assert "audit_anchor.syslog" in line and "absent.sock" in line


class _Hook(BaseHTTPRequestHandler):
    got: list[dict] = []
    status = 204

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Hook.got.append(json.loads(body))
        self.send_response(_Hook.status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_webhook(home: Path) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/anchor"
    try:
        (home / "config.yaml").write_text(f"audit_anchor: {{webhook: '{url}'}}\n")
        code, out = cli("audit", "anchor")
        assert code == 0 and f"webhook:{url}" in out and _Hook.got[-1]["seq"] == 1, out
        _Hook.status = 500
        assert f"webhook {url}: answered HTTP 500" in one_line("audit", "anchor")
    finally:
        server.shutdown()
        server.server_close()


def test_a_tampered_log_is_not_anchored(home: Path, tmp_path: Path) -> None:
    import sqlite3

    with sqlite3.connect(home / "audit.db") as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("UPDATE audit SET payload = replace(payload, 'gpu007', 'gpu008')")
    f = tmp_path / "a.jsonl"
    code, out = cli("audit", "anchor", "--to", f"file:{f}")
    assert code == 1 and "nothing anchored" in out and not f.exists(), out


def test_the_configured_secret_keys_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = tmp_path / "h"
    h.mkdir()
    monkeypatch.setenv("WARDEN_HOME", str(h))
    (h / "config.yaml").write_text("audit_key_env: WARDEN_TEST_AUDIT_SECRET\n")
    monkeypatch.setenv("WARDEN_TEST_AUDIT_SECRET", "s" * 32)
    log = WardenSettings.load().open_audit()
    log.append("run_end", {"status": "done"})
    log.close()
    assert not (h / "audit.key").exists()
    code, out = cli("audit", "verify")
    assert code == 0, out
    monkeypatch.setenv("WARDEN_TEST_AUDIT_SECRET", "t" * 32)  # another key: nothing verifies
    code, out = cli("audit", "verify")
    assert code == 1 and "not the audit key it was written with" in out, out
    monkeypatch.delenv("WARDEN_TEST_AUDIT_SECRET")
    assert "audit_key_env: $WARDEN_TEST_AUDIT_SECRET is unset" in one_line("audit", "verify")
