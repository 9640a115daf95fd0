"""The fleet-wide first look at GPUs through the site's Prometheus, and the nodes it names.

On a 10,000-node cluster Warden does not read 10,000 exporter pages. It asks Prometheus a few
bounded questions about the whole fleet at once (PromQL instant queries, each ``topk``-capped):

* any Xid: ``DCGM_FI_DEV_XID_ERRORS != 0``;
* any double-bit ECC error or row-remap failure;
* clock-event reasons beyond the normal ones (bits 0x8 and up: HW slowdown, sync boost, SW/HW
  thermal, power brake) and GPUs at or above 85 C;
* utilisation outliers per job: a node whose mean ``DCGM_FI_DEV_GPU_UTIL`` is below 60 % of its
  job's (dcgm-exporter's ``hpc_job`` label) mean, as ``warden:gpu_util_outlier``;
* two fleet aggregates (GPUs reporting, mean utilisation) as ``warden:*`` series.

Results come back as Prometheus API JSON (format prometheus-query-json) and are kept as evidence;
``anomalous_nodes`` reads them to name the nodes whose full DCGM series (or exporter page) and
kernel log the second phase fetches. Query names and shapes: the Prometheus HTTP API and PromQL
documentation (comparison filters keep the metric name; ``label_replace`` may set ``__name__``).
"""

from __future__ import annotations

import re
from datetime import datetime

import httpx

from tools.facts import Facts
from tools.live.model import LivePlanInput
from tools.sources.base import FetchRequest

__all__ = ["first_pass_queries", "first_pass_requests", "anomalous_nodes", "UTIL_OUTLIER", "HOT_C", "safe_host"]

UTIL_OUTLIER = "warden:gpu_util_outlier"
HOT_C = 85
_REASON_BITS_FROM = 8
"""Clock-event reason bits at or above 0x8 are anomalies (0x1 idle, 0x2 app clocks, 0x4 SW power cap are normal)."""
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def safe_host(name: str) -> bool:
    """Whether a node name may go into a PromQL regex or a URL (cluster text is data, never syntax)."""
    return bool(_HOST.fullmatch(name))


def _named(expr: str, name: str) -> str:
    """``expr`` as a series named ``name`` (``warden:stat``), with a ``stat`` label so that ``or``
    (which matches label sets, not names) keeps two aggregates side by side."""
    stat = name.split(":", 1)[-1]
    return f'label_replace(label_replace({expr}, "__name__", "{name}", "", ""), "stat", "{stat}", "", "")'


def first_pass_queries(k: int) -> dict[str, str]:
    """Snapshot file name -> PromQL instant query; each returns at most ``k`` series."""
    reasons = " or ".join(
        f"topk({k}, {m} and ({m} % 256 >= {_REASON_BITS_FROM}))"
        for m in ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"))
    job_util = 'avg by (Hostname, hpc_job) (DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})'
    job_mean = 'avg by (hpc_job) (DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})'
    return {
        "prometheus_xid.json": f"topk({k}, DCGM_FI_DEV_XID_ERRORS != 0)",
        "prometheus_memory_errors.json": f"topk({k}, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0) or "
                                         f"topk({k}, DCGM_FI_DEV_ROW_REMAP_FAILURE > 0)",
        "prometheus_clock_events.json": f"{reasons} or topk({k}, DCGM_FI_DEV_GPU_TEMP >= {HOT_C})",
        "prometheus_util_outliers.json": _named(
            f"bottomk({k}, {job_util} < on (hpc_job) group_left () (0.6 * {job_mean}))", UTIL_OUTLIER),
        "prometheus_fleet.json": _named("count(DCGM_FI_DEV_GPU_UTIL)", "warden:gpus_reporting") + " or "
                                 + _named("avg(DCGM_FI_DEV_GPU_UTIL)", "warden:gpu_util_mean"),
    }


def first_pass_requests(cfg: LivePlanInput, now: datetime) -> list[FetchRequest]:
    """The fleet-wide Prometheus queries (none without a Prometheus URL)."""
    if not cfg.prometheus_url:
        return []
    base = cfg.prometheus_url.rstrip("/")
    k = 8 * cfg.bounds.max_nodes
    return [FetchRequest(format="prometheus-query-json", path=f"gpu/{name}", timeout_s=cfg.bounds.timeout_s,
                         url=str(httpx.URL(f"{base}/api/v1/query", params={"query": q, "time": f"{now.timestamp():.3f}"})))
            for name, q in first_pass_queries(k).items()]


def anomalous_nodes(facts: Facts) -> list[str]:
    """Nodes the first pass names, worst first: an Xid or memory error, then held-down clocks or
    heat, then utilisation outliers followed by the other nodes of their job (the peers a
    straggler is judged against)."""
    hard: list[str] = []
    clocks: list[str] = []
    outliers: list[str] = []
    jobs: list[str] = []
    for s in facts.gpu_samples:
        node = s.node
        if not node:
            continue
        if s.name in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE") \
                and s.value:
            hard.append(node)
        elif s.name in ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") \
                and int(s.value) % 256 >= _REASON_BITS_FROM:
            clocks.append(node)
        elif s.name == "DCGM_FI_DEV_GPU_TEMP" and s.value >= HOT_C:
            clocks.append(node)
        elif s.name == UTIL_OUTLIER:
            outliers.append(node)
            if s.labels.get("hpc_job"):
                jobs.append(s.labels["hpc_job"])
    peers: list[str] = []
    wanted = set(jobs)
    if wanted:
        for j in facts.jobs:
            if j.job_id in wanted:
                peers += j.nodes
    return list(dict.fromkeys(hard + clocks + outliers + peers))
