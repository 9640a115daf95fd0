"""Live mode at scale: a fleet-wide PromQL first pass names the nodes to look at; per-node evidence only
for those; every phase fetched in a bounded pool with a per-fetch timeout, in plan order."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from urllib.parse import parse_qs, urlparse

from tools.errors import CommandError
from tools.facts import build_facts
from tools.live.collect import LiveCollector
from tools.live.model import KernelLogAccess, LiveBounds, LivePlanInput
from tools.live.plan import first_requests, followup_requests, nodes_that_matter
from tools.live.promql import UTIL_OUTLIER, anomalous_nodes, first_pass_queries
from tools.models.slurm import SlurmJob, SlurmNode
from tools.sources.base import FetchRequest, RawArtifact

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def _vector(*series: tuple[dict[str, str], float]) -> bytes:
    """A Prometheus /api/v1/query answer (resultType vector), as the HTTP API prints it."""
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": m, "value": [NOW.timestamp(), str(v)]} for m, v in series]}}).encode()


def _art(path: str, data: bytes) -> RawArtifact:
    return RawArtifact(format="prometheus-query-json", data=data, path=path, captured_at=NOW)


def test_first_pass_is_a_few_bounded_fleet_wide_queries() -> None:
    cfg = LivePlanInput(prometheus_url="http://prom:9090", bounds=LiveBounds(max_nodes=4))
    reqs = first_requests(cfg, NOW)
    prom = [r for r in reqs if r.url]
    assert [r.format for r in reqs if r.argv][0] == "scontrol-job-text" and len(prom) == 5
    queries = [parse_qs(urlparse(r.url or "").query)["query"][0] for r in prom]
    assert all("topk(32," in q or "bottomk(32," in q or "count(" in q for q in queries)
    assert any("DCGM_FI_DEV_XID_ERRORS != 0" in q for q in queries)
    assert any("DCGM_FI_DEV_CLOCKS_EVENT_REASONS % 256 >= 8" in q for q in queries)
    assert any('group_left' in q and "hpc_job" in q for q in queries)
    assert set(first_pass_queries(4)) == {p.rsplit("/", 1)[1] for p in (r.path or "" for r in prom)}
    assert not [r for r in first_requests(LivePlanInput(), NOW) if r.url]  # no Prometheus, no queries


def test_anomalies_name_nodes_worst_first_with_the_outliers_job_peers() -> None:
    arts = [
        _art("gpu/prometheus_xid.json", _vector(({"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "4",
                                                  "Hostname": "gpu0260"}, 79))),
        _art("gpu/prometheus_clock_events.json", _vector(
            ({"__name__": "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gpu": "0", "Hostname": "gpu0013"}, 96),
            ({"__name__": "DCGM_FI_DEV_GPU_TEMP", "gpu": "1", "Hostname": "gpu0777"}, 91))),
        _art("gpu/prometheus_util_outliers.json", _vector(
            ({"__name__": UTIL_OUTLIER, "Hostname": "gpu0502", "hpc_job": "4100100"}, 31.5))),
        _art("gpu/prometheus_fleet.json", _vector(({"__name__": "warden:gpus_reporting"}, 80000))),
    ]
    facts = build_facts(arts, captured_at=NOW)
    facts.jobs = [SlurmJob(job_id="4100100", state="RUNNING", nodes=["gpu0501", "gpu0502", "gpu0503"]),
                  SlurmJob(job_id="7", state="FAILED", nodes=["gpu0900"], end_time=NOW)]
    facts.nodes = [SlurmNode(name="gpu0042", state="DOWN"), SlurmNode(name="gpu0500", state="IDLE")]
    assert anomalous_nodes(facts) == ["gpu0260", "gpu0013", "gpu0777", "gpu0502", "gpu0501", "gpu0503"]
    order = nodes_that_matter(facts, limit=8)
    assert order == ["gpu0260", "gpu0013", "gpu0777", "gpu0502", "gpu0501", "gpu0503", "gpu0042", "gpu0900"]
    assert nodes_that_matter(facts, limit=2) == ["gpu0260", "gpu0013"]


def test_second_phase_scrapes_only_named_safe_nodes_when_an_exporter_url_is_set() -> None:
    facts = build_facts([], captured_at=NOW)
    facts.nodes = [SlurmNode(name="gpu01", state="DOWN"), SlurmNode(name='x"} or vector(1) #', state="DOWN"),
                   SlurmNode(name="gpu02", state="IDLE")]
    cfg = LivePlanInput(prometheus_url="http://prom:9090", exporter_url="http://{node}:9400/metrics",
                        kernel_logs=KernelLogAccess(kind="file", path="/var/log/nodes/{node}/kern.log"))
    reqs = followup_requests(cfg, facts, NOW)
    scrapes = [r for r in reqs if r.format == "dcgm-prometheus-text"]
    assert [(r.url, r.node, r.path) for r in scrapes] == [("http://gpu01:9400/metrics", "gpu01", "gpu/gpu01.prom")]
    assert not [r for r in reqs if r.format == "prometheus-query-json"]
    no_exporter = followup_requests(cfg.model_copy(update={"exporter_url": None}), facts, NOW)
    query = parse_qs(urlparse(next(r.url for r in no_exporter if r.url) or "").query)["query"][0]
    assert "gpu01" in query and "vector(1)" not in query  # cluster text never becomes PromQL


class _Slow:
    """A runner whose commands each take ``delay`` seconds; counts how many run at once."""

    def __init__(self, name: str, delay: float, hang: set[str] = frozenset()) -> None:
        self.name, self.delay, self.hang = name, delay, hang
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.order: list[str] = []

    def fetch(self, req: FetchRequest) -> RawArtifact:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(30 if req.format in self.hang else self.delay)
            if req.format in ("sdiag-text", "sinfo-reasons-text", "sacct-text", "sinfo-text", "squeue-text",
                              "sacctmgr-qos-text"):
                raise CommandError(req.argv or [], 1, "not scripted")
            data = b"No jobs in the system\n" if req.format == "scontrol-job-text" else \
                b"NodeName=gpu01 Arch=x86_64\n   State=IDLE ThreadsPerCore=2\n"
            return RawArtifact(format=req.format, data=data, path=req.path or "x")
        finally:
            with self.lock:
                self.now -= 1


def test_a_phase_runs_in_a_bounded_pool_and_keeps_plan_order() -> None:
    runner = _Slow("local", 0.2)
    col = LiveCollector(LivePlanInput(bounds=LiveBounds(parallel=3)), runner)
    arts = col.collect()
    assert 2 <= runner.most <= 3
    assert [a.format for a in arts] == ["scontrol-job-text", "scontrol-node-text"]  # in plan order
    assert {r.format for r, _ in col.failures} == {"squeue-text", "sinfo-text", "sinfo-reasons-text", "sacct-text",
                                                    "sdiag-text", "sacctmgr-qos-text"}


def test_an_ssh_like_runner_takes_turns() -> None:
    runner = _Slow("ssh", 0.05)
    LiveCollector(LivePlanInput(bounds=LiveBounds(parallel=8)), runner).collect()
    assert runner.most == 1


def test_a_hanging_fetch_is_reported_and_not_waited_for() -> None:
    runner = _Slow("local", 0.01, hang={"sdiag-text"})
    col = LiveCollector(LivePlanInput(bounds=LiveBounds(parallel=8, timeout_s=0.2)), runner)
    t0 = time.monotonic()
    col.collect()
    assert time.monotonic() - t0 < 25  # the hung fetch (30 s) was abandoned
    assert any(r.format == "sdiag-text" and "no answer" in why for r, why in col.failures)
