"""`warden serve` over real HTTP (uvicorn on loopback): Alertmanager v4 and generic webhooks,
runbook matching, grouping, cool-downs kept in the run store across restarts, a bounded queue under
an alert storm, posts to a file and to the local Slack Web API emulator (Slack cannot be reached)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from agent.runbooks.target import Target
from agent.serve.alerts import Alert
from agent.serve.server import build_server
from tests.emulators.slack import SlackEmulator
from tests.emulators.uvicorn_thread import serving

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


def _am(alerts: list[dict], status: str = "firing", version: str = "4") -> dict:
    """An Alertmanager webhook notification (payload version 4) as Alertmanager sends it."""
    common = alerts[0]["labels"] if alerts else {}
    return {"receiver": "warden", "status": status, "alerts": alerts,
            "groupLabels": {"alertname": common.get("alertname", "")}, "commonLabels": common,
            "commonAnnotations": {}, "externalURL": "http://127.0.0.1:9093", "version": version,
            "groupKey": '{}:{alertname="%s"}' % common.get("alertname", ""), "truncatedAlerts": 0}


def _alert(name: str, node: str, **labels: str) -> dict:
    return {"status": "firing", "labels": {"alertname": name, "node": node, **labels},
            "annotations": {"summary": f"{name} on {node}"}, "startsAt": "2026-03-04T10:15:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://127.0.0.1:9090/graph", "fingerprint": "1a30ba71cca2921f"}


def _runbook(d: Path, name: str, **kw: object) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, "match": {"alertname": "WardenGpuXid"}, "question": "Xid on $nodes ($count nodes). Why?",
           "post": [{"file": "out.jsonl"}], "autonomy": "recommend", **kw}
    (d / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    return d


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    (h / "config.yaml").write_text(yaml.safe_dump({"approvers": {"bob": ["oncall"]}}))
    monkeypatch.setenv("WARDEN_HOME", str(h))
    for v in ("WARDEN_SLACK_TOKEN", "WARDEN_SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(v, raising=False)
    return h


def _posts(home: Path) -> list[dict]:
    p = home / "posts" / "out.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_alertmanager_alert_is_investigated_and_posted_once_within_cooldown(home, tmp_path):
    rbs = _runbook(tmp_path / "rb", "gpu")
    server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs])
    with serving(server.asgi) as url:
        body = _am([_alert("WardenGpuXid", "gpu007", xid="79")])
        r = httpx.post(f"{url}/alertmanager", json=body, timeout=30)
        assert r.status_code == 202 and r.json()["queued"] == 1, r.text
        assert server.queue.join(120)
        posts = _posts(home)
        assert len(posts) == 1 and posts[0]["diagnosis"]["root_cause"] == "gpu_hardware_fault"
        assert "gpu007" in posts[0]["diagnosis"]["question"] and posts[0]["runbook"] == "gpu"
        assert any(p["status"] == "pending_approval" and len(p["plan_hash"]) == 64 for p in posts[0]["plans"])
        again = httpx.post(f"{url}/alertmanager", json=body, timeout=30).json()
        assert again["cooled_down"] == 1 and again["queued"] == 0
        status = httpx.get(f"{url}/status", timeout=10).json()
        assert status["queue"]["done"] == 1 and status["latest"][0]["root_cause"] == "gpu_hardware_fault"
    server.queue.close()
    # a restart keeps the cool-down (it lives in the run store)
    again = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs])
    rep = again.intake.receive([Alert.model_validate(_alert("WardenGpuXid", "gpu007"))])
    assert rep.cooled_down == 1
    again.queue.close()


def test_storm_of_1000_alerts_for_1000_nodes_is_one_investigation(home, tmp_path):
    rbs = _runbook(tmp_path / "rb", "gpu", autonomy="observe")
    server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs], workers=1, max_queued=4)
    with serving(server.asgi) as url:
        body = _am([_alert("WardenGpuXid", f"gpu{i:04d}", xid="79") for i in range(1000)])
        rep = httpx.post(f"{url}/alertmanager", json=body, timeout=60).json()
        assert rep["received"] == 1000 and rep["groups"] == 1 and rep["queued"] == 1
        assert server.queue.join(120)
    posts = _posts(home)
    assert len(posts) == 1 and "1000 nodes" in posts[0]["diagnosis"]["question"]
    assert all(p["status"] == "observed" for p in posts[0]["plans"])
    server.queue.close()


def test_many_groups_are_bounded_by_the_queue(home, tmp_path):
    rbs = _runbook(tmp_path / "rb", "gpu", match={}, match_re={"alertname": "Storm.*"}, autonomy="observe",
                   group_by=["alertname"])
    server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs], workers=1, max_queued=3)
    alerts = [_alert(f"Storm{i % 50}", f"n{i:04d}") for i in range(1000)]
    rep = server.intake.receive([Alert.model_validate(a) for a in alerts])
    assert rep.groups == 50 and rep.queued + rep.merged + rep.dropped == 50 and rep.dropped >= 46
    assert server.queue.join(300)
    assert server.queue.stats["started"] <= 4  # one running + three waiting, never 50 (nor 1,000)
    # the dropped groups did not take their cool-downs: they are investigated when Alertmanager repeats them
    rep2 = server.intake.receive([Alert.model_validate(a) for a in alerts])
    assert rep2.cooled_down == rep.queued + rep.merged and rep2.queued + rep2.merged + rep2.dropped == rep.dropped
    assert server.queue.join(300)
    server.queue.close()


def test_generic_webhook_and_bad_payloads(home, tmp_path):
    rbs = _runbook(tmp_path / "rb", "gpu", autonomy="observe")
    server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs])
    with serving(server.asgi) as url:
        one = {"labels": {"alertname": "WardenGpuXid", "instance": "gpu007:9400"}, "annotations": {"summary": "x"}}
        r = httpx.post(f"{url}/webhook", json=one, timeout=30)
        assert r.status_code == 202 and r.json()["queued"] == 1
        assert httpx.post(f"{url}/webhook", json={"labels": {}}, timeout=10).status_code == 422
        bad = httpx.post(f"{url}/alertmanager", json=_am([_alert("X", "n")], version="3"), timeout=10)
        assert bad.status_code == 422 and "version" in bad.json()["error"]
        assert httpx.post(f"{url}/alertmanager", content=b"{not json", timeout=10).status_code == 400
        unmatched = httpx.post(f"{url}/alertmanager", json=_am([_alert("Other", "n")]), timeout=10).json()
        assert unmatched["unmatched"] == 1 and unmatched["queued"] == 0
        assert server.queue.join(120)
    assert "gpu007" in _posts(home)[0]["diagnosis"]["question"]  # instance's :port stripped
    server.queue.close()


def test_alert_posts_to_slack_with_buttons(home, tmp_path, monkeypatch):
    rbs = _runbook(tmp_path / "rb", "gpu", post=[{"slack": "C0ONCALL"}])
    with SlackEmulator(token="xoxb-t", channels={"C0ONCALL"}) as emu:
        monkeypatch.setenv("WARDEN_SLACK_TOKEN", "xoxb-t")
        monkeypatch.setenv("WARDEN_SLACK_API_URL", emu.api_url)
        monkeypatch.setenv("WARDEN_SLACK_SIGNING_SECRET", "s" * 32)
        server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs])
        assert server.slack
        server.intake.receive([Alert.model_validate(_alert("WardenGpuXid", "gpu007", xid="<!channel> 79"))])
        assert server.queue.join(120)
        msg = emu.messages[-1]
        assert msg["channel"] == "C0ONCALL" and "gpu_hardware_fault" in msg["text"]
        assert any(b["type"] == "actions" for b in msg["blocks"])
        assert "<!channel>" not in json.dumps(msg["blocks"])
        up = emu.uploads[-1]  # the runbook's images: true (the default): the report's pictures in the thread
        assert up["thread_ts"] == msg["ts"] and [f["filename"] for f in up["files"]] == ["gpu-heatmap.png",
                                                                                        "timeline.png"]
        server.queue.close()


def test_webhook_destination_gets_the_document_and_a_refusal_is_reported(home, tmp_path):
    """A runbook's {webhook: URL} gets the investigation as one JSON POST (a real HTTP receiver on
    loopback); a webhook that refuses (HTTP 500) is a failed Delivery naming the status, and the
    runbook's other destinations are still written."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    got: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ok = self.path == "/ok"
            if ok:
                got.append(json.loads(body))
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{hook.server_address[1]}"
    try:
        rbs = _runbook(tmp_path / "rb", "gpu", post=[{"webhook": f"{base}/ok"}, {"webhook": f"{base}/broken"},
                                                     {"file": "out.jsonl"}])
        server = build_server(Target.of(snapshot=INCIDENT), runbook_dirs=[rbs])
        server.intake.receive([Alert.model_validate(_alert("WardenGpuXid", "gpu007"))])
        assert server.queue.join(120)
        server.queue.close()
    finally:
        hook.shutdown()
        hook.server_close()
    assert len(got) == 1 and got[0]["runbook"] == "gpu" and got[0]["mode"] == "recommend"
    assert got[0]["diagnosis"]["root_cause"] == "gpu_hardware_fault" and "node:gpu007" in got[0]["diagnosis"]["culprits"]
    assert any(p["status"] == "pending_approval" and len(p["plan_hash"]) == 64 for p in got[0]["plans"])
    res = server.runner.results[-1]
    assert [(d.ok, d.detail) for d in res.deliveries[:2]] == [(True, "HTTP 200"), (False, "HTTP 500")]
    assert _posts(home)[0]["diagnosis"]["run_id"] == got[0]["diagnosis"]["run_id"]
