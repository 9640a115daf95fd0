"""Parser for `dcgmi diag -r <level> -j` (format dcgmi-diag-json).

Two shapes are read. DCGM 2.x/3.x print::

    {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}, ...]},
        {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [
            {"gpu_ids": "0", "status": "Pass"},
            {"gpu_ids": "1", "status": "Fail", "warnings": [{"warning": "...", "error_id": 82}]}]}]}]},
     "Driver Version Detected": "535.104.05", "version": "3.3.5"}

(older 2.x give ``warnings`` as plain strings), and DCGM 4.x prints ``"DCGM Diagnostic"`` with
results naming ``entity_group``/``entity_id`` instead of ``gpu_ids``. Real shapes: NVIDIA's DCGM
diagnostics documentation and its published JSON schema (see tests/fixtures/dcgmi-diag-json).
"""

from __future__ import annotations

import json
from typing import Any

from tools.errors import ParseError
from tools.models.dcgm_diag import DcgmDiagReport, DiagTestResult

__all__ = ["parse_dcgmi_diag_json"]

_ROOTS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
_MAX_RESULTS = 10_000


def _gpu(result: dict[str, Any], path: str) -> int | None:
    raw = result.get("gpu_ids", result.get("gpu_id"))
    if raw is None and str(result.get("entity_group", "GPU")).upper() == "GPU":
        raw = result.get("entity_id")
    if raw is None or raw == "":
        return None
    try:
        return int(str(raw).split(",")[0])
    except ValueError:
        raise ParseError(path, None, f"result names GPU {str(raw)[:40]!r}, not a GPU index") from None


def _warnings(result: dict[str, Any]) -> tuple[list[str], list[int]]:
    texts, ids = [], []
    for w in result.get("warnings") or []:
        if isinstance(w, str):
            texts.append(w[:500])
        elif isinstance(w, dict):
            texts.append(str(w.get("warning") or w.get("message") or "")[:500])
            if isinstance(w.get("error_id"), int):
                ids.append(w["error_id"])
    return texts, ids


def parse_dcgmi_diag_json(text: str, *, path: str, node: str | None = None) -> list[DcgmDiagReport]:
    """Parse one `dcgmi diag -j` output into a single DcgmDiagReport.

    Raises:
        ParseError: not JSON, no ``DCGM GPU Diagnostic`` / ``DCGM Diagnostic`` object, or a
            category, test or result of the wrong shape (naming ``path``).
    """
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ParseError(path, getattr(e, "lineno", None), f"not JSON: {e}") from None
    except RecursionError:
        raise ParseError(path, None, "JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise ParseError(path, None, "expected a JSON object")
    root = next((doc[k] for k in _ROOTS if k in doc), None)
    if not isinstance(root, dict) or not isinstance(root.get("test_categories"), list):
        raise ParseError(path, None, "no 'DCGM GPU Diagnostic' object with test_categories")
    results: list[DiagTestResult] = []
    for cat in root["test_categories"]:
        if not isinstance(cat, dict) or not isinstance(cat.get("tests"), list):
            raise ParseError(path, None, "a test category without a tests list")
        for test in cat["tests"]:
            if not isinstance(test, dict) or not isinstance(test.get("results"), list):
                raise ParseError(path, None, f"test in {str(cat.get('category'))[:40]!r} without results")
            for res in test["results"]:
                if not isinstance(res, dict) or not isinstance(res.get("status"), str):
                    raise ParseError(path, None, f"result of {str(test.get('name'))[:40]!r} without a status")
                texts, ids = _warnings(res)
                results.append(DiagTestResult(category=str(cat.get("category") or "?"),
                                              test=str(test.get("name") or "?"), gpu=_gpu(res, path),
                                              status=res["status"], warnings=texts, error_ids=ids))
                if len(results) > _MAX_RESULTS:
                    raise ParseError(path, None, f"more than {_MAX_RESULTS} results")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    version = doc.get("version") or meta.get("version")
    driver = doc.get("Driver Version Detected") or meta.get("driver")
    return [DcgmDiagReport(node=node, file=path, dcgm_version=str(version) if version else None,
                           driver_version=str(driver) if driver else None, results=results)]
