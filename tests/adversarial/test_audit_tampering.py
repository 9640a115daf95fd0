"""Adversarial class from issue 15 item 2: the audit log rewritten by someone who can write
``audit.db`` but cannot read its key, then checked with ``warden audit verify``.

Before the keyed chain and anchors, each attack below verified "audit log ok" (or, for a deleted
log, "no audit log yet"): deleting the newest rows and fixing the head, emptying the log, editing a
row and recomputing every later hash, deleting or recreating ``audit.db``. Now each exits 1 and
names what happened. The attacker restores the SQLite triggers after tampering, so not even a
warning gives it away; what catches it is the HMAC chain, the head's MAC and the anchor exported
beforehand to a file outside $WARDEN_HOME.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.audit_chain import canonical_json
from agent.cli.app import app
from agent.settings import WardenSettings

runner = CliRunner()
N = 6


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    (h / "config.yaml").write_text(f"audit_anchor: {{file: {tmp_path / 'outside' / 'anchors.jsonl'}}}\n")
    monkeypatch.setenv("WARDEN_HOME", str(h))
    return h


def write(n: int = N, start: int = 0) -> None:
    log = WardenSettings.load().open_audit()
    for i in range(start, start + n):
        log.append("policy_decision", {"action": "drain_node", "node": f"gpu{i:03d}", "decision": "needs_approval"},
                   run_id="run-1")
    log.close()


def cli(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output
    return r.exit_code, " ".join(r.output.split())


def anchor() -> None:
    code, out = cli("audit", "anchor")
    assert code == 0 and out.startswith("anchored "), out


def tamper(db: Path, *statements: str) -> None:
    """Raw SQL with the triggers dropped and then put back, as an attacker with write access would."""
    with sqlite3.connect(db) as conn:
        saved = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        for name, _ in saved:
            conn.execute(f"DROP TRIGGER {name}")
        for sql in statements:
            conn.execute(sql)
        tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for _, sql in saved:
            if sql.split(" ON ")[1].split()[0] in tables:
                conn.execute(sql)


def failed(*fragments: str) -> str:
    code, out = cli("audit", "verify")
    assert code == 1 and "audit log FAILED" in out and "ok:" not in out, out
    for f in fragments:
        assert f in out, (f, out)
    return out


def test_an_untouched_anchored_log_verifies(home: Path) -> None:
    write()
    anchor()
    write(2, start=N)  # later rows extend the anchored chain
    code, out = cli("audit", "verify")
    assert code == 0 and out.startswith(f"audit log ok: {N + 2} rows") and f"(seq {N})" in out, out


def test_deleting_the_last_rows_and_rewriting_the_head(home: Path) -> None:
    write()
    anchor()
    db = home / "audit.db"
    with sqlite3.connect(db) as conn:
        h4 = conn.execute("SELECT hash FROM audit WHERE seq = 4").fetchone()[0]
    tamper(db, "DELETE FROM audit WHERE seq > 4", f"UPDATE audit_head SET seq = 4, hash = '{h4}'")
    failed("head's MAC does not verify")


def test_deleting_the_last_rows_and_putting_back_an_old_head(home: Path, tmp_path: Path) -> None:
    write(4)
    shutil.copy(home / "audit.db", tmp_path / "old.db")  # the attacker kept a copy from earlier
    write(2, start=4)
    anchor()
    shutil.copy(tmp_path / "old.db", home / "audit.db")
    failed("rows 5..6 missing at the end", "truncated")


def test_emptying_the_log(home: Path, tmp_path: Path) -> None:
    write(0)
    shutil.copy(home / "audit.db", tmp_path / "empty.db")
    write()
    anchor()
    db = home / "audit.db"
    tamper(db, "UPDATE audit_head SET seq = 0, hash = (SELECT prev_hash FROM audit WHERE seq = 1)", "DELETE FROM audit")
    failed("head's MAC")
    shutil.copy(tmp_path / "empty.db", db)  # with the head of the empty log as it once was
    failed(f"the log is empty, but {tmp_path / 'outside' / 'anchors.jsonl'}", f"held {N} rows (emptied)")


@pytest.mark.parametrize("guess", [None, b"warden", b"0" * 32])
def test_editing_a_row_and_recomputing_every_later_hash(home: Path, guess: bytes | None) -> None:
    write()
    anchor()
    db = home / "audit.db"
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT seq, ts, kind, run_id, payload, prev_hash FROM audit ORDER BY seq").fetchall()
    prev, statements = rows[1][5], []  # row 1 stays; from row 2 on everything is recomputed
    for seq, ts, kind, run_id, payload, _ in rows[1:]:
        if seq == 2:
            payload = payload.replace("needs_approval", "allow")
        body = (prev + canonical_json({"seq": seq, "ts": ts, "kind": kind, "run_id": run_id,
                                       "payload": json.loads(payload)})).encode()
        digest = hashlib.sha256(body).hexdigest() if guess is None else hmac.new(guess, body, "sha256").hexdigest()
        statements.append(f"UPDATE audit SET payload = '{payload}', prev_hash = '{prev}', hash = '{digest}' "
                          f"WHERE seq = {seq}")
        prev = digest
    tamper(db, *statements, f"UPDATE audit_head SET hash = '{prev}'")
    failed("FAILED at row 2", "hash mismatch")


def test_a_deleted_log(home: Path, tmp_path: Path) -> None:
    write()
    anchor()
    (home / "audit.db").unlink()
    failed("audit.db is missing", f"(seq {N}", "the log was deleted")
    (home / "config.yaml").write_text("{}\n")  # no anchor configured: the key still shows the log existed
    failed("audit.db is missing, but its key audit.key exists")


def test_a_recreated_log(home: Path) -> None:
    write()
    anchor()
    (home / "audit.db").unlink()
    write(1)  # the next run makes a fresh, self-consistent log
    failed("recreated")
    (home / "audit.db").unlink()
    (home / "audit.key").unlink()
    write(1)  # key and log made again together: only the anchor's log id tells
    failed("audit.db was recreated", "names log")


def test_a_log_without_the_keyed_chain(home: Path) -> None:
    """A whole file written by hand with plain SHA-256 (the chain before HMAC) is never ok."""
    write()
    anchor()
    db = home / "audit.db"
    tamper(db, "DROP TABLE audit_meta")
    failed("audit_meta is missing")


def test_a_corrupt_log_is_one_line(home: Path) -> None:
    write()
    (home / "audit.db").write_bytes(b"this is not sqlite" * 100)
    code, out = cli("audit", "verify")
    assert code == 2 and out.startswith(f"error: {home / 'audit.db'}: not a usable audit database"), out
