"""The fleet-wide PromQL first pass against a real Prometheus (Debian's, the one the sandbox runs):
five dcgm-exporter-format pages served on loopback are scraped, and the queries name the node with an
Xid, the node held down by thermal clock events, the utilisation outlier of a job (with its peers),
and keep both fleet aggregates. Needs the ``prometheus`` binary, not the Slurm sandbox."""

from __future__ import annotations

import http.server
import random
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from sandbox.scale_gpu import dcgm_scrape
from sandbox.scale_model import build_cluster
from tools.facts import build_facts
from tools.live.promql import anomalous_nodes, first_pass_queries
from tools.models.slurm import SlurmJob
from tools.sources.base import RawArtifact

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs the prometheus binary")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pages() -> dict[str, str]:
    cl = build_cluster(8, 20, seed=5)
    rng = random.Random(1)
    out = {}
    for i, n in enumerate(cl.nodes[:5]):
        n.job, n.gpus_used = 77, 8
        for g in n.gpus:
            g.util_pct, g.reasons, g.temp_c, g.xid = 97, 0x4, 60, 0
        if i == 0:
            n.gpus[4].xid = 79
        if i == 1:
            for g in n.gpus:
                g.reasons, g.temp_c = 0x60, 91
        if i == 4:
            for g in n.gpus:
                g.util_pct = 20
        out[n.name] = dcgm_scrape(n, rng, uptime_s=1000.0)
    return out


def test_first_pass_names_the_anomalous_nodes(tmp_path: Path) -> None:
    pages = _pages()

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = pages.get(self.path.strip("/").split("/")[0], "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = f"127.0.0.1:{server.server_address[1]}"
    jobs = "\n".join(f"  - job_name: {n}\n    metrics_path: /{n}/metrics\n    static_configs: [{{targets: ['{target}']}}]"
                     for n in pages)
    (tmp_path / "prometheus.yml").write_text(f"global:\n  scrape_interval: 1s\nscrape_configs:\n{jobs}\n")
    port = _port()
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/api/v1/query"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until every page has been scraped once
            try:
                r = httpx.get(url, params={"query": "count(DCGM_FI_DEV_GPU_UTIL)"}, timeout=5).json()
                if r["data"]["result"] and r["data"]["result"][0]["value"][1] == "40":
                    break
            except (httpx.HTTPError, KeyError, IndexError, ValueError):  # ValueError: "Service Unavailable" while it starts
                pass
            time.sleep(0.5)
        arts = []
        for name, query in first_pass_queries(256).items():
            resp = httpx.get(url, params={"query": query}, timeout=10)
            assert resp.json()["status"] == "success", (name, resp.text[:300])
            arts.append(RawArtifact(format="prometheus-query-json", data=resp.content, path=f"gpu/{name}"))
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        server.shutdown()
    facts = build_facts(arts)
    names = {s.name for s in facts.gpu_samples}
    assert {"warden:gpus_reporting", "warden:gpu_util_mean", "warden:gpu_util_outlier"} <= names
    facts.jobs = [SlurmJob(job_id="77", state="RUNNING", nodes=list(pages))]
    assert anomalous_nodes(facts) == ["gpu0001", "gpu0002", "gpu0005", "gpu0003", "gpu0004"]
