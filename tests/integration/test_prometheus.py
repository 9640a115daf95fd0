"""GPU metrics: each node's dcgm-exporter-format endpoint, scraped by the sandbox's real Prometheus."""

from __future__ import annotations

import json
import time

from sandbox.layout import SandboxConfig
from tools.sources.base import FetchRequest
from tools.sources.http import HTTPSource


def _query(cfg: SandboxConfig, promql: str) -> list[dict]:
    _url, body = HTTPSource().get(f"{cfg.prometheus_url}/api/v1/query", params={"query": promql}, timeout_s=10)
    doc = json.loads(body)
    assert doc["status"] == "success"
    return doc["data"]["result"]


def test_each_node_serves_dcgm_metrics(config: SandboxConfig) -> None:
    for node in config.nodes:
        url = f"http://127.0.0.1:{config.exporter_port(node)}/metrics"
        art = HTTPSource().fetch(FetchRequest(format="dcgm-prometheus-text", url=url, node=node))
        text = art.data.decode()
        assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text
        util = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
        assert len(util) == config.gpus_per_node
        assert all(f'Hostname="{node}"' in line and 'modelName="NVIDIA A100-SXM4-80GB"' in line for line in util)
        assert {f'device="nvidia{i}"' for i in range(4)} <= {part for line in util for part in line.split(",")}


def test_prometheus_scrapes_sixteen_gpu_series(config: SandboxConfig) -> None:
    deadline = time.monotonic() + 4 * config.scrape_interval_s + 5
    while True:
        result = _query(config, "DCGM_FI_DEV_GPU_UTIL")
        if len(result) == 16 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(result) == 16
    hosts = {r["metric"]["Hostname"] for r in result}
    assert hosts == set(config.nodes)
    assert {r["metric"]["gpu"] for r in result} == {"0", "1", "2", "3"}
    assert all(r["metric"]["UUID"].startswith("GPU-") for r in result)


def test_prometheus_range_query_has_history(config: SandboxConfig) -> None:
    end = time.time()
    _url, body = HTTPSource().get(
        f"{config.prometheus_url}/api/v1/query_range",
        params={"query": 'DCGM_FI_DEV_SM_CLOCK{Hostname="gpu01"}', "start": end - 60, "end": end, "step": "5s"},
    )
    doc = json.loads(body)
    assert doc["data"]["resultType"] == "matrix"
    assert len(doc["data"]["result"]) == 4
    assert all(len(series["values"]) >= 1 for series in doc["data"]["result"])
