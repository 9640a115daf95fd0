"""`[kubernetes]` in warden.toml wires the Kubernetes source into live collection (diagnose --live,
record, act) and the Kubernetes actions into act: a kubeconfig pointing at the loopback API server
(tests/emulators/kube_api.py), the official client's kubeconfig loading, real API JSON."""

from __future__ import annotations

from pathlib import Path

import yaml

from agent.live.act import collect_live, setup_for
from agent.live.config import load_live_config
from agent.live.record import write_snapshot
from agent.settings import WardenSettings
from tests.emulators.kube_api import KubeApi
from tools.errors import CommandError
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext


class NoSlurm:
    """A runner for a site without Slurm: every command fails at once, as on a Kubernetes-only host."""

    name = "local"

    def run(self, argv, *, timeout_s=30.0, input_bytes=None):
        raise CommandError(list(argv), None, "FileNotFoundError: No such file or directory")

    def fetch(self, req):
        raise CommandError(list(req.argv or []), None, "FileNotFoundError: No such file or directory")


def _config(tmp_path: Path, api: KubeApi, namespaces: str = "") -> Path:
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "loop",
        "clusters": [{"name": "loop", "cluster": {"server": api.url}}],
        "users": [{"name": "warden", "user": {"token": "test-token"}}],
        "contexts": [{"name": "loop", "context": {"cluster": "loop", "user": "warden"}}]}))
    toml = tmp_path / "warden.toml"
    toml.write_text(f'cluster = "k8s-lab"\n[kubernetes]\nkubeconfig = "{kc}"\ncontext = "loop"\n{namespaces}')
    return toml


def test_live_collection_reads_nodes_pods_events_and_records_them(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    with KubeApi() as api:
        cfg = load_live_config(_config(tmp_path, api))
        run = collect_live(cfg, runner=NoSlurm())
        paths = {a.path for a in run.artifacts}
        assert {"k8s/nodes.json", "k8s/pods.json", "k8s/events.json"} <= paths
        facts = run.ctx.facts
        assert {n.name for n in facts.k8s_nodes} == {"gpu-a100-01", "gpu-a100-02", "gpu-a100-03", "cpu-01"}
        assert any(p.name.startswith("infer-api") for p in facts.k8s_pods)
        assert [r["path"].split("?")[0] for r in api.requests] == ["/api/v1/nodes", "/api/v1/pods", "/api/v1/events"]
        assert all(r["method"] == "GET" for r in api.requests)
        out = write_snapshot(run.artifacts, tmp_path / "snap", captured_at=run.collector.captured_at, cluster="k8s-lab")
        replay = ReadContext.from_snapshot(out).facts
        assert len(replay.k8s_nodes) == 4 and len(replay.k8s_pods) == len(facts.k8s_pods)


def test_namespaces_limit_pods_and_events(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    with KubeApi() as api:
        cfg = load_live_config(_config(tmp_path, api, 'namespaces = ["serving"]\n'))
        run = collect_live(cfg, runner=NoSlurm())
        assert {a.path for a in run.artifacts} >= {"k8s/nodes.json", "k8s/pods-serving.json", "k8s/events-serving.json"}
        assert {p.namespace for p in run.ctx.facts.k8s_pods} == {"serving"}
    with KubeApi() as api:  # an API that fails a list: reported like any failed fetch, the rest kept
        api.answer = lambda m, p, b: (403, {"kind": "Status", "apiVersion": "v1", "status": "Failure",  # type: ignore
                                            "message": "forbidden", "reason": "Forbidden", "code": 403})
        run = collect_live(load_live_config(_config(tmp_path, api)), runner=NoSlurm())
        assert [r for r, _ in run.collector.failures if r.url == "/api/v1/nodes"]


def test_act_cordons_through_the_configured_client(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    with KubeApi() as api:
        cfg = load_live_config(_config(tmp_path, api))
        run = collect_live(cfg, runner=NoSlurm())
        settings = WardenSettings(autonomy={"default": "execute"})
        setup = setup_for(cfg, settings, requester="alice", execute=True, facts=run.ctx.facts, runner=NoSlurm())
        out = setup.propose(ActionSpec(type="cordon_node", node="gpu-a100-03", reason="Xid 79"))
        assert out.status == "executed" and out.verification.ok, out.message
        assert api.nodes["gpu-a100-03"]["spec"]["unschedulable"] is True
        assert api.mutations()[0]["method"] == "PATCH"
