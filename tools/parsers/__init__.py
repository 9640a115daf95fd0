"""Parsers: raw text/JSON -> typed models, one module per DESIGN.md format id.

``parse_artifact`` is the single entry point used by read tools and replay: it decodes the bytes
strictly and dispatches on the artifact's format id. Each parser is pure (no I/O, no clock) and
raises ``ParseError(path, line, reason)`` on malformed input.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from tools.errors import UnknownFormatError
from tools.parsers.base import decode_text
from tools.parsers.slurm.client_error import SLURM_FORMATS, client_error
from tools.sources.base import RawArtifact

__all__ = ["parse_artifact", "PARSERS"]

# format id -> (module, function). Every function takes (text, *, path) plus, if it declares them,
# the manifest entry's node / job / columns as keyword arguments.
PARSERS: dict[str, tuple[str, str]] = {
    "squeue-json": ("tools.parsers.slurm.squeue_json", "parse_squeue_json"),
    "squeue-text": ("tools.parsers.slurm.squeue_text", "parse_squeue_text"),
    "sinfo-json": ("tools.parsers.slurm.sinfo_json", "parse_sinfo_json"),
    "sinfo-text": ("tools.parsers.slurm.sinfo_text", "parse_sinfo_text"),
    "sinfo-reasons-text": ("tools.parsers.slurm.sinfo_reasons_text", "parse_sinfo_reasons_text"),
    "scontrol-job-text": ("tools.parsers.slurm.scontrol_job_text", "parse_scontrol_job_text"),
    "scontrol-node-text": ("tools.parsers.slurm.scontrol_node_text", "parse_scontrol_node_text"),
    "sacct-json": ("tools.parsers.slurm.sacct_json", "parse_sacct_json"),
    "sacct-text": ("tools.parsers.slurm.sacct_text", "parse_sacct_text"),
    "sdiag-text": ("tools.parsers.slurm.sdiag_text", "parse_sdiag_text"),
    "sacctmgr-qos-text": ("tools.parsers.slurm.sacctmgr_qos_text", "parse_sacctmgr_qos_text"),
    "lctl-md-stats": ("tools.parsers.lustre.lctl_md_stats", "parse_lctl_md_stats"),
    "lctl-job-stats": ("tools.parsers.lustre.lctl_job_stats", "parse_lctl_job_stats"),
    "lfs-df": ("tools.parsers.lustre.lfs_df", "parse_lfs_df"),
    "lfs-df-inodes": ("tools.parsers.lustre.lfs_df", "parse_lfs_df_inodes"),
    "dcgm-prometheus-text": ("tools.parsers.gpu.dcgm_prometheus_text", "parse_dcgm_prometheus_text"),
    "prometheus-query-json": ("tools.parsers.gpu.prometheus_query_json", "parse_prometheus_query_json"),
    "nvidia-smi-csv": ("tools.parsers.gpu.nvidia_smi_csv", "parse_nvidia_smi_csv"),
    "nvidia-smi-q": ("tools.parsers.gpu.nvidia_smi_q", "parse_nvidia_smi_q"),
    "kernel-log": ("tools.parsers.kernel.kernel_log", "parse_kernel_log"),
    "job-log": ("tools.parsers.joblog.job_log", "parse_job_log"),
    "k8s-json": ("tools.parsers.k8s.k8s_json", "parse_k8s_json"),
    "k8s-events-text": ("tools.parsers.k8s.k8s_events_text", "parse_k8s_events_text"),
    "dcgmi-diag-json": ("tools.parsers.gpu.dcgmi_diag_json", "parse_dcgmi_diag_json"),
}


def _parser(path: str, format_id: str) -> Callable[..., list[Any]]:
    if format_id not in PARSERS:
        raise UnknownFormatError(path, format_id)
    found = _load(*PARSERS[format_id])
    if found is None:
        raise UnknownFormatError(path, format_id)
    return found[0]


@lru_cache(maxsize=None)
def _load(module: str, func: str) -> tuple[Callable[..., list[Any]], frozenset[str]] | None:
    """A parser function and the keyword arguments it accepts (looked up once per function)."""
    try:
        fn = getattr(importlib.import_module(module), func)
    except ModuleNotFoundError as e:
        if e.name != module:  # a parser's own broken import is a bug, not an unknown format
            raise
        return None
    return fn, frozenset(inspect.signature(fn).parameters)


COLUMNAR: dict[str, tuple[str, str]] = {
    "dcgm-prometheus-text": ("tools.parsers.gpu.dcgm_prometheus_text", "parse_dcgm_prometheus_blocks"),
}
"""Formats with a columnar reader (tools.models.gpu_columns) that ``parse_artifact(..., columnar=True)`` uses."""


def parse_artifact(artifact: RawArtifact, *, columnar: bool = False) -> list[Any]:
    """Decode and parse one raw artifact with the parser of its format id.

    With ``columnar``, a format in ``COLUMNAR`` may return SampleBlocks (columns of samples) instead of its
    parser's MetricSamples: the same samples, without an object each (build_facts asks for that).

    Returns the parser's typed models (e.g. list[SlurmJob] for squeue-json); a Slurm command's
    recorded error output (controller unreachable) becomes one SlurmClientError.

    Raises:
        ParseError: malformed, empty or non-UTF-8 input, naming artifact.path.
        UnknownFormatError: no parser for the format id.
    """
    fn = _parser(artifact.path, artifact.format)
    text = decode_text(artifact.data, path=artifact.path)
    if artifact.format in SLURM_FORMATS:
        failed = client_error(text, path=artifact.path, format=artifact.format)
        if failed is not None:
            return [failed]
    context: dict[str, Any] = {}
    if artifact.node is not None:
        context["node"] = artifact.node
    if artifact.job is not None:
        context["job"] = artifact.job
    if artifact.columns is not None:
        context["columns"] = artifact.columns
    accepted = _load(*PARSERS[artifact.format])[1]  # type: ignore[index]
    spec = COLUMNAR.get(artifact.format) if columnar else None
    found = _load(*spec) if spec is not None else None
    if found is not None:
        fn, accepted = found
    return fn(text, path=artifact.path, **{k: v for k, v in context.items() if k in accepted})
