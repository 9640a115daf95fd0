"""The fixed vocabularies of DESIGN.md: root-cause ids, action types and format ids."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "RootCause",
    "ActionType",
    "FormatId",
    "ROOT_CAUSES",
    "ACTION_TYPES",
    "FORMAT_IDS",
]

RootCause = Literal[
    "gpu_hardware_fault",
    "interconnect_fault",
    "straggler_node",
    "metadata_wall",
    "storage_full",
    "io_bandwidth_bound",
    "input_pipeline_bound",
    "gpu_oom",
    "host_oom",
    "scheduler_wait",
    "node_unresponsive",
    "job_stuck_completing",
    "timeout_without_checkpoint",
    "checkpoint_corrupt",
    "silent_data_corruption",
    "thermal_power_throttle",
    "node_config_mismatch",
    "node_software_fault",
    "storage_unavailable",
    "controller_unreachable",
    "user_code_error",
    "insufficient_gpu_capacity",
    "image_pull_failure",
    "crash_loop",
    "device_plugin_failure",
    "job_preempted",
    "job_held",
    "fs_client_fault",
    "inconclusive",
    "healthy",
]

ActionType = Literal[
    "run_gpu_diagnostic",
    "notify_owner",
    "drain_node",
    "resume_node",
    "hold_job",
    "release_job",
    "cordon_node",
    "uncordon_node",
    "update_job",
    "requeue_job",
    "resubmit_from_checkpoint",
    "resize_job",
    "cancel_job",
    "evict_pod",
    "drain_k8s_node",
]

FormatId = Literal[
    "squeue-json",
    "squeue-text",
    "sinfo-json",
    "sinfo-text",
    "sinfo-reasons-text",
    "scontrol-job-text",
    "scontrol-node-text",
    "sacct-json",
    "sacct-text",
    "sdiag-text",
    "sacctmgr-qos-text",
    "lctl-md-stats",
    "lctl-job-stats",
    "lfs-df",
    "lfs-df-inodes",
    "dcgm-prometheus-text",
    "prometheus-query-json",
    "nvidia-smi-csv",
    "nvidia-smi-q",
    "kernel-log",
    "job-log",
    "k8s-json",
    "k8s-events-text",
    "dcgmi-diag-json",
]

ROOT_CAUSES: tuple[str, ...] = get_args(RootCause)
ACTION_TYPES: tuple[str, ...] = get_args(ActionType)
FORMAT_IDS: tuple[str, ...] = get_args(FormatId)
# Which actions are read-only, reversible or irreversible is declared on each action class
# (tools.actions.ACTION_FACTS), not listed here.
