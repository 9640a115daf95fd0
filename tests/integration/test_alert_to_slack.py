"""Issue 11's sandbox test: an injected Xid 79 fault fires the sandbox's real Prometheus rule, its
real Alertmanager posts to `warden serve`, the gpu-xid runbook diagnoses the live sandbox, and the
answer with Approve buttons reaches the local Slack Web API emulator (Slack cannot be reached from
here), the report's GPU heat map uploaded into its thread. Signed button presses then: the
requester on her irreversible plan, an unknown Slack user and a second press are refused in the
thread; an on-call approver's press drains the node through policy and audit, and sinfo shows it
drained."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import yaml

from agent.audit import AuditLog
from agent.live.session import write_sandbox_config
from agent.runbooks.target import Target
from agent.serve.server import build_server
from sandbox import cluster, faults
from sandbox.layout import Layout
from tests.emulators.slack import SlackEmulator
from tests.emulators.slack_requests import SlackRequests
from tests.emulators.uvicorn_thread import serving
from tests.integration.live_helpers import cancel_jobs, wait_healthy
from tools.sources.local import LocalSource

SECRET = "0f3c6e1b9a2d4c5e8f7a6b5c4d3e2f1a"
ALICE, BOB, EVE = "U0ALICE", "U0BOB", "U0EVE"


def _home(tmp: Path, state_dir: Path) -> Path:
    home = tmp / "home"
    (home / "runbooks").mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({
        "approvers": {"alice": ["oncall"], "bob": ["oncall"]}, "slack_approvers": {ALICE: "alice", BOB: "bob"}}))
    (home / "runbooks" / "gpu-xid.yaml").write_text(yaml.safe_dump({
        "name": "gpu-xid", "match": {"alertname": "WardenGpuXid"}, "autonomy": "recommend", "requester": "alice",
        "question": "DCGM reports Xid $label_xid on $nodes. Which job is hurt, why, and what should be done?",
        "post": [{"slack": "C0ONCALL"}, {"file": "alerts.jsonl"}], "cooldown_s": 600}))
    write_sandbox_config(state_dir, home / "warden.toml")
    return home


def _block(msg: dict, word: str) -> str:
    last = ""
    for b in msg["blocks"]:
        if b["type"] == "section":
            last = b["text"]["text"]
        if b["type"] == "actions" and word in last:
            return b["block_id"]
    raise AssertionError(f"no buttons under a plan mentioning {word!r}")


def test_fault_alert_runbook_slack_approval_drains_node(state_dir: Path, tmp_path: Path, monkeypatch) -> None:
    home = _home(tmp_path, state_dir)
    monkeypatch.setenv("WARDEN_HOME", str(home))
    cfg = Layout.of(state_dir).load_config()
    port = int(cfg.warden_webhook_url.rsplit(":", 1)[1].split("/")[0])
    slurm = LocalSource(env=cluster.env(state_dir))
    rec = None
    try:
        with SlackEmulator({ALICE, BOB, EVE}, token="xoxb-it", channels={"C0ONCALL"}) as emu:
            monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-it")
            monkeypatch.setenv("WARDEN_SLACK_API_URL", emu.api_url)
            monkeypatch.setenv("WARDEN_SLACK_SIGNING_SECRET", SECRET)
            rec = faults.inject("gpu_xid79", state_dir)
            injected = time.monotonic()
            server = build_server(Target.of(config=home / "warden.toml"), runbook_dirs=[home / "runbooks"])
            with serving(server.asgi, port=port) as url:
                msg = emu.wait_for(lambda m: m["channel"] == "C0ONCALL" and m.get("blocks"), timeout_s=150)
                latency = time.monotonic() - injected
                first = server.runner.results[0] if server.runner.results else None
                print(f"\nfault injected -> Slack message: {latency:.1f} s (alert received -> posted: "
                      f"{first.latency_s if first else '?'} s)")
                ans = copy.deepcopy(msg)
                text = str(ans["blocks"])
                assert "gpu_hardware_fault" in ans["text"] and f"node:{rec.node}" in text, ans["text"]
                req = SlackRequests(f"{url}/slack/events", SECRET, emu)
                thread = ans["ts"]

                def reply(needle: str) -> str:
                    return emu.wait_for(lambda m: m.get("thread_ts") == thread and needle in (m.get("text") or ""),
                                        timeout_s=120)["text"]

                req.press(ans, "warden_approve", user_id=ALICE, block_id=_block(ans, "irreversible"))
                assert "cannot approve" in reply("Refused for <@U0ALICE>")
                drain = _block(ans, "rain")
                req.press(ans, "warden_approve", user_id=EVE, block_id=drain)
                assert "not an allowed approver" in reply("Refused for <@U0EVE>")
                req.press(ans, "warden_approve", user_id=BOB, block_id=drain)
                done = reply("Approved by <@U0BOB>")
                assert "executed and verified" in done, done
                state = cluster.node_states(state_dir)[rec.node]
                assert state.startswith(("drain", "drng")), state
                req.press(ans, "warden_approve", user_id=BOB, block_id=drain)
                assert "already" in reply("Refused for <@U0BOB>")
                # The report's pictures, drawn from the live DCGM values, in the answer's thread.
                deadline = time.monotonic() + 60
                while not [u for u in emu.uploads if u["thread_ts"] == thread] and time.monotonic() < deadline:
                    time.sleep(0.2)
                up = next(u for u in emu.uploads if u["thread_ts"] == thread)
                assert up["files"][0]["filename"] == "gpu-heatmap.png" and up["files"][0]["data"][:4] == b"\x89PNG"
            server.queue.close()
        kinds = [(r.kind, r.payload.get("event")) for r in AuditLog(home / "audit.db").records()]
        assert ("execution", "started") in kinds and ("verification", None) in kinds
    finally:
        if rec is not None:
            cancel_jobs(slurm, rec.jobs_submitted)
            faults.clear("gpu_xid79", state_dir)
            slurm.run(["scontrol", "update", f"NodeName={rec.node}", "State=RESUME"], timeout_s=15)
    wait_healthy(state_dir, slurm)


def test_metadata_storm_fires_mdt_rule_and_bundled_runbook_observes(state_dir: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:
    """The emulated Lustre exporter's counters jump with the storm, WardenMdtOpsHigh fires, and the
    bundled mdt-ops runbook (observe mode) writes a metadata_wall diagnosis naming the job."""
    from agent.runbooks.model import bundled_dir

    home = _home(tmp_path, state_dir)
    monkeypatch.setenv("WARDEN_HOME", str(home))
    for v in ("WARDEN_SLACK_TOKEN", "WARDEN_SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(v, raising=False)
    cfg = Layout.of(state_dir).load_config()
    port = int(cfg.warden_webhook_url.rsplit(":", 1)[1].split("/")[0])
    slurm = LocalSource(env=cluster.env(state_dir))
    rec = faults.inject("metadata_storm", state_dir)
    try:
        server = build_server(Target.of(config=home / "warden.toml"), runbook_dirs=[bundled_dir()])
        with serving(server.asgi, port=port):
            out = home / "posts" / "alerts.jsonl"
            deadline = time.monotonic() + 120
            while not (out.exists() and out.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert out.exists(), "no investigation was posted"
            doc = json.loads(out.read_text().splitlines()[0])
        server.queue.close()
        assert doc["runbook"] == "mdt-ops" and doc["mode"] == "observe"
        assert doc["diagnosis"]["root_cause"] == "metadata_wall", doc["diagnosis"]["summary"]
        assert f"job:{rec.job}" in doc["diagnosis"]["culprits"]
        assert "scratch-MDT0000" in doc["diagnosis"]["question"]
    finally:
        cancel_jobs(slurm, rec.jobs_submitted)
        faults.clear("metadata_storm", state_dir)
    wait_healthy(state_dir, slurm)


def test_generic_webhook_runbook_in_execute_mode_drains_without_approval(state_dir: Path, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """A generic JSON alert (POST /webhook) matched by a runbook in execute mode, where config.yaml's
    autonomy allows execute: the reversible drain runs through policy without anyone pressing a
    button and is verified (sinfo shows the node drained); the irreversible plans still wait for
    approval; the investigation is posted to a file."""
    import httpx

    home = tmp_path / "home"
    (home / "runbooks").mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"approvers": {"bob": ["oncall"]},
                                                      "autonomy": {"default": "execute"}}))
    (home / "runbooks" / "xid-auto.yaml").write_text(yaml.safe_dump({
        "name": "xid-auto", "match": {"alertname": "WardenGpuXid"}, "autonomy": "execute",
        "question": "DCGM reports Xid $label_xid on $nodes. Which job is hurt, why, and what should be done?",
        "post": [{"file": "auto.jsonl"}]}))
    write_sandbox_config(state_dir, home / "warden.toml")
    monkeypatch.setenv("WARDEN_HOME", str(home))
    for v in ("WARDEN_SLACK_TOKEN", "WARDEN_SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(v, raising=False)
    slurm = LocalSource(env=cluster.env(state_dir))
    rec = faults.inject("gpu_xid79", state_dir)
    try:
        server = build_server(Target.of(config=home / "warden.toml"), runbook_dirs=[home / "runbooks"])
        with serving(server.asgi) as url:
            alert = {"labels": {"alertname": "WardenGpuXid", "node": rec.node, "xid": "79"},
                     "annotations": {"summary": f"Xid 79 on {rec.node}"}}
            assert httpx.post(f"{url}/webhook", json=alert, timeout=30).status_code == 202
            assert server.queue.join(150)
        server.queue.close()
        doc = json.loads((home / "posts" / "auto.jsonl").read_text().splitlines()[0])
        assert doc["mode"] == "execute" and doc["diagnosis"]["root_cause"] == "gpu_hardware_fault"
        plans = {p["type"]: p for p in doc["plans"]}
        assert plans["drain_node"]["status"] == "executed", plans["drain_node"]["message"]
        assert cluster.node_states(state_dir)[rec.node].startswith(("drain", "drng"))
        waiting = [p for t, p in plans.items() if t != "drain_node" and p["status"] == "pending_approval"]
        assert waiting and all(p["approval_id"] for p in waiting)  # the irreversible ones wait for a person
        kinds = [(r.kind, r.payload.get("event")) for r in AuditLog(home / "audit.db").records()]
        assert ("execution", "started") in kinds and ("verification", None) in kinds
        assert not [k for k in kinds if k == ("approval", "approve")]  # nobody approved the drain
    finally:
        cancel_jobs(slurm, rec.jobs_submitted)
        faults.clear("gpu_xid79", state_dir)
        slurm.run(["scontrol", "update", f"NodeName={rec.node}", "State=RESUME"], timeout_s=15)
    wait_healthy(state_dir, slurm)
