"""Typed read tools: small summaries of the evidence, whatever the cluster size."""

from tools.read.context import ReadContext
from tools.read.cost import get_gpu_hours_lost
from tools.read.coverage import get_evidence_coverage
from tools.read.findings import get_findings
from tools.read.gpu import get_gpu_metrics
from tools.read.k8s import get_k8s_objects
from tools.read.logs import get_job_log_events, get_kernel_events
from tools.read.lustre import get_lustre_stats
from tools.read.overview import get_cluster_overview
from tools.read.slurm import get_accounting, get_jobs, get_nodes, get_pending_jobs

__all__ = [
    "ReadContext",
    "get_cluster_overview",
    "get_findings",
    "get_evidence_coverage",
    "get_gpu_hours_lost",
    "get_gpu_metrics",
    "get_k8s_objects",
    "get_job_log_events",
    "get_kernel_events",
    "get_lustre_stats",
    "get_jobs",
    "get_nodes",
    "get_pending_jobs",
    "get_accounting",
]
