"""Cause precedence in one table: how strong each kind of evidence is, and which cause explains which.

DESIGN.md: "Where evidence supports a more specific cause, the specific one is the root cause and the general
one a symptom". Two parts:

* **Evidence strength** — a finding's confidence comes from the kind of evidence it rests on, not from a
  literal in a check: a direct hardware signal (an Xid, a DBE counter, a link-down line, a clock-event
  reason) > the scheduler's or orchestrator's state (a node NOT_RESPONDING, a drain reason, a pending reason,
  a job state) > a symptom in a job's own log (an NCCL timeout, a traceback) > a heuristic over metrics
  (utilisation far below peers).
* **Supersedes** — ``SUPERSEDES[a]`` lists the causes that ``a`` explains when both are found about the same
  thing (they share a culprit): an NCCL timeout in job 42 is the symptom of an Xid 79 on job 42's node.

The built-in model ranks findings with this table (it reads it from its instructions, as an LLM does:
``render_precedence``), and tests/unit/tools/knowledge/test_precedence.py holds it to DESIGN.md's rule.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Strength", "STRENGTHS", "CONFIDENCE", "INFORMATIONAL", "NORMAL", "confidence", "SUPERSEDES", "supersedes", "render_precedence",
           "PRECEDENCE_HEADER", "CAUSE_LABELS"]

Strength = Literal["direct", "state", "symptom", "heuristic"]
STRENGTHS: tuple[Strength, ...] = ("direct", "state", "symptom", "heuristic")
"""Strongest first."""

CONFIDENCE: dict[Strength, tuple[float, float]] = {
    "direct": (0.9, 0.95),
    "state": (0.8, 0.85),
    "symptom": (0.6, 0.7),
    "heuristic": (0.55, 0.65),
}
"""Confidence of a finding by its evidence strength: (alone, corroborated by a second kind of evidence)."""


INFORMATIONAL = 0.45
"""Confidence of a finding that answers a question but is no fault (a person's hold, a planned drain):
below the action threshold, so it leads only when the question names its subject."""
NORMAL = 0.3
"""Confidence of a finding that describes the system working as designed (a job waiting its turn on
Priority or Resources): never an answer on its own, only an explanation in the summary."""


def confidence(strength: Strength, *, corroborated: bool = False, informational: bool = False,
               normal: bool = False) -> float:
    """The confidence a finding of this evidence strength carries (see ``CONFIDENCE``); ``INFORMATIONAL``
    for a finding that describes someone's deliberate choice rather than a fault, ``NORMAL`` for the
    system working as designed."""
    if normal:
        return NORMAL
    if informational:
        return INFORMATIONAL
    alone, more = CONFIDENCE[strength]
    return more if corroborated else alone


_JOB_SYMPTOMS = ("user_code_error", "timeout_without_checkpoint", "job_stuck_completing")

SUPERSEDES: dict[str, tuple[str, ...]] = {
    "gpu_hardware_fault": ("interconnect_fault", "straggler_node", "silent_data_corruption", "node_unresponsive",
                           "node_software_fault", "device_plugin_failure", "insufficient_gpu_capacity", "crash_loop",
                           "thermal_power_throttle", "gpu_oom", *_JOB_SYMPTOMS),
    "interconnect_fault": ("straggler_node", "storage_unavailable", "fs_client_fault", *_JOB_SYMPTOMS),
    "thermal_power_throttle": ("straggler_node", "input_pipeline_bound"),
    "straggler_node": ("input_pipeline_bound",),
    "fs_client_fault": ("storage_unavailable", "node_software_fault", "checkpoint_corrupt", "input_pipeline_bound",
                        *_JOB_SYMPTOMS),
    "storage_unavailable": ("input_pipeline_bound", "io_bandwidth_bound", "node_unresponsive", *_JOB_SYMPTOMS),
    # (a storage server that went down is the file system unavailable to everyone, not one more dead node)
    "metadata_wall": ("storage_unavailable", "io_bandwidth_bound", "input_pipeline_bound", "straggler_node",
                      *_JOB_SYMPTOMS),
    "io_bandwidth_bound": ("input_pipeline_bound",),
    "storage_full": ("user_code_error", "timeout_without_checkpoint", "crash_loop", "insufficient_gpu_capacity",
                     "controller_unreachable"),  # slurmdbd's database or slurmctld's state on a full disk
    "host_oom": ("user_code_error", "crash_loop", "node_unresponsive", "timeout_without_checkpoint"),
    "gpu_oom": ("user_code_error", "crash_loop"),
    "node_unresponsive": ("job_stuck_completing", "scheduler_wait", "insufficient_gpu_capacity", "crash_loop",
                          "user_code_error", "timeout_without_checkpoint"),
    "controller_unreachable": ("node_unresponsive", "scheduler_wait", "job_stuck_completing", "storage_unavailable"),
    "node_config_mismatch": ("scheduler_wait", "insufficient_gpu_capacity", "device_plugin_failure"),
    "node_software_fault": ("user_code_error", "scheduler_wait", "crash_loop", "insufficient_gpu_capacity",
                            "device_plugin_failure", "node_unresponsive", "job_held"),
    # (slurmd that cannot start never answers; a prolog failing there requeues and holds the job it launched)  # a broken driver or runtime leaves the plugin nothing to serve
    "device_plugin_failure": ("insufficient_gpu_capacity", "crash_loop"),
    "job_preempted": ("user_code_error", "scheduler_wait", "timeout_without_checkpoint", "insufficient_gpu_capacity",
                      "interconnect_fault"),  # the recreated pod waits for GPUs; peers' NCCL errors when a rank went
    "job_held": ("scheduler_wait",),
    "checkpoint_corrupt": ("user_code_error", "crash_loop"),  # a pod restarting onto the same truncated file
    "silent_data_corruption": ("user_code_error", "straggler_node", "node_software_fault"),
    # (a node whose GPUs compute NaNs is the node failing the jobs sent to it, told more precisely)
    "image_pull_failure": ("crash_loop",),
}
"""cause -> the causes it explains when both are about the same culprit (most specific first)."""


def supersedes(a: str, b: str) -> bool:
    """True when cause ``a`` explains cause ``b`` (``b`` is then a symptom of ``a``)."""
    return b in SUPERSEDES.get(a, ())


PRECEDENCE_HEADER = "Cause precedence"


def render_precedence() -> str:
    """The table as text for a model's instructions: the strength scale, then one line per cause::

        Cause precedence (a cause explains the causes after '>' when they share a culprit):
        - gpu_hardware_fault > interconnect_fault, straggler_node, ...
    """
    lines = [f"Evidence strength, strongest first: {' > '.join(STRENGTHS)} (direct hardware signal > scheduler "
             "or node state > job-log symptom > heuristic).",
             f"{PRECEDENCE_HEADER} (a cause explains the causes after '>' when they share a culprit):"]
    lines += [f"- {cause} > {', '.join(explained)}" for cause, explained in SUPERSEDES.items()]
    return "\n".join(lines)


CAUSE_LABELS: dict[str, str] = {
    "gpu_hardware_fault": "GPU hardware fault",
    "interconnect_fault": "interconnect fault",
    "straggler_node": "straggler node",
    "metadata_wall": "Lustre metadata server overloaded",
    "storage_full": "storage full",
    "io_bandwidth_bound": "I/O bandwidth bound",
    "input_pipeline_bound": "GPUs starved by the input pipeline",
    "gpu_oom": "GPU out of memory",
    "host_oom": "host out of memory",
    "scheduler_wait": "job waiting on the scheduler",
    "node_unresponsive": "node not responding",
    "job_stuck_completing": "job stuck completing",
    "timeout_without_checkpoint": "time limit reached without a checkpoint",
    "checkpoint_corrupt": "corrupt checkpoint",
    "silent_data_corruption": "silent data corruption",
    "thermal_power_throttle": "GPU clocks throttled by thermal/power limits",
    "node_config_mismatch": "node configuration mismatch",
    "node_software_fault": "node software fault",
    "storage_unavailable": "file-system servers unreachable",
    "fs_client_fault": "file-system client down on a node",
    "controller_unreachable": "Slurm controller unreachable",
    "user_code_error": "error in the job's own code",
    "job_preempted": "job preempted",
    "job_held": "job held",
    "insufficient_gpu_capacity": "not enough free GPUs",
    "image_pull_failure": "container image cannot be pulled",
    "crash_loop": "container crash loop",
    "device_plugin_failure": "GPU device plugin failure",
    "inconclusive": "inconclusive",
    "healthy": "healthy",
}
"""How the summary names each cause."""
