"""Parser for Prometheus HTTP API query results (format prometheus-query-json).

Shapes (``/api/v1/query`` and ``/api/v1/query_range``)::

    {"status": "success", "data": {"resultType": "vector",
      "result": [{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", ...},
                  "value": [1772618100.781, "97"]}]}}
    {"status": "success", "data": {"resultType": "matrix",
      "result": [{"metric": {...}, "values": [[1772617800, "98"], [1772617860, "0"]]}]}}
    {"status": "success", "data": {"resultType": "scalar", "result": [1772618100.781, "1"]}}
    {"status": "error", "errorType": "bad_data", "error": "invalid parameter \\"query\\": ..."}

Sample values are strings (``"NaN"``, ``"+Inf"`` included). Real shapes: the Prometheus HTTP API
documentation (see tests/fixtures/prometheus-query-json/SOURCES.md).
"""

from __future__ import annotations

import json
from typing import Any

from tools.errors import ParseError
from tools.models.gpu import MetricSample
from tools.parsers.gpu.dcgm_prometheus_text import instance_host
from tools.parsers.base import json_loads

__all__ = ["parse_prometheus_query_json"]


def _point(point: Any, *, path: str, where: str) -> tuple[float, float]:
    if not isinstance(point, list) or len(point) != 2:
        raise ParseError(path, None, f"{where}: a sample must be [timestamp, \"value\"]")
    try:
        return float(point[0]), float(point[1])
    except (TypeError, ValueError):
        raise ParseError(path, None, f"{where}: non-numeric sample {str(point)[:80]}") from None


def _sample(metric: dict[str, str], ts: float, value: float, node: str | None) -> MetricSample:
    labels = {k: str(v) for k, v in metric.items() if k != "__name__"}
    return MetricSample(
        name=str(metric.get("__name__", "")),
        labels=labels,
        value=value,
        timestamp_s=ts,
        node=labels.get("Hostname") or node or instance_host(labels.get("instance")),
        gpu=labels.get("gpu"),
    )


def parse_prometheus_query_json(text: str, *, path: str, node: str | None = None) -> list[MetricSample]:
    """Parse a Prometheus ``/api/v1/query`` or ``/api/v1/query_range`` response.

    Args:
        text: the JSON body.
        path: snapshot-relative path, for errors.
        node: the manifest's node, used when a series has no ``Hostname`` label.

    Returns MetricSamples: one per vector element, one per point of every matrix series
    (timestamp_s in Unix seconds), or one named ``scalar`` for a scalar result. ``name`` is the
    series' ``__name__`` ("" when the query dropped it, e.g. ``rate(...)``).

    Raises:
        ParseError: naming path (and line for invalid JSON, e.g. a truncated body) when the
            JSON is malformed, the status is ``error`` (errorType and error given), or the
            result has an unknown shape.
    """
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(path, e.lineno, f"invalid JSON: {e.msg} (column {e.colno})") from None
    except (ValueError, RecursionError) as e:  # over-long integers, absurd nesting
        raise ParseError(path, None, f"invalid JSON: {str(e)[:120]}") from None
    if not isinstance(doc, dict):
        raise ParseError(path, None, "not a Prometheus API response object")
    status = doc.get("status")
    if status == "error":
        kind = str(doc.get("errorType", "unknown"))[:60]
        raise ParseError(path, None, f"Prometheus query failed: {kind}: {str(doc.get('error', ''))[:300]}")
    if status != "success" or not isinstance(doc.get("data"), dict):
        raise ParseError(path, None, f"unexpected status {str(status)[:40]!r} or missing data")
    data = doc["data"]
    kind = data.get("resultType")
    result = data.get("result")
    if kind == "scalar":
        ts, value = _point(result, path=path, where="scalar")
        return [MetricSample(name="scalar", value=value, timestamp_s=ts, node=node)]
    if kind not in ("vector", "matrix") or not isinstance(result, list):
        raise ParseError(path, None, f"unsupported resultType {str(kind)[:40]!r}")
    samples: list[MetricSample] = []
    for i, series in enumerate(result):
        if not isinstance(series, dict) or not isinstance(series.get("metric"), dict):
            raise ParseError(path, None, f"result[{i}] has no metric object")
        metric = series["metric"]
        points = [series.get("value")] if kind == "vector" else series.get("values")
        if not isinstance(points, list):
            raise ParseError(path, None, f"result[{i}] has no {'value' if kind == 'vector' else 'values'}")
        for point in points:
            ts, value = _point(point, path=path, where=f"result[{i}]")
            samples.append(_sample(metric, ts, value, node))
    return samples
