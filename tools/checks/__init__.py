"""Deterministic checks: parsed facts -> findings. One check per module, one registry here.

Site config overrides checks' arguments or turns checks off (``{check: gpu_xid, args: {min_events:
2}}``, ``{check: input_pipeline_bound, enabled: false}``); the arguments are validated against the
check's config model, never evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.checks.base import CheckSpec
from tools.checks.checkpoint_corrupt import CheckpointConfig, check_checkpoint_load_failure
from tools.checks.controller import ControllerConfig, check_controller_unreachable
from tools.checks.gpu_oom import GpuOomConfig, check_job_cuda_oom
from tools.checks.gpu_straggler import StragglerConfig, check_gpu_straggler
from tools.checks.gpu_throttle import ThrottleConfig, check_gpu_thermal_throttle
from tools.checks.gpu_xid import XidConfig, check_gpu_xid
from tools.checks.host_oom import HostOomConfig, check_node_host_oom
from tools.checks.input_pipeline import InputPipelineConfig, check_input_pipeline_bound
from tools.checks.interconnect import InterconnectConfig, check_interconnect_link_down
from tools.checks.io_bound import IoBoundConfig, check_io_bandwidth_bound
from tools.checks.k8s_crash_loop import K8sCrashLoopConfig, check_k8s_crash_loop
from tools.checks.k8s_device_plugin import K8sDevicePluginConfig, check_k8s_device_plugin
from tools.checks.k8s_gpu_capacity import K8sGpuCapacityConfig, check_k8s_gpu_capacity
from tools.checks.k8s_gpu_xid import K8sGpuXidConfig, check_k8s_gpu_xid
from tools.checks.k8s_image_pull import K8sImagePullConfig, check_k8s_image_pull
from tools.checks.k8s_node_not_ready import K8sNodeNotReadyConfig, check_k8s_node_not_ready
from tools.checks.metadata_wall import MetadataConfig, check_mdt_metadata_storm
from tools.checks.nccl import NcclConfig, check_nccl_collective_failure
from tools.checks.node_config import NodeConfigConfig, check_node_config_mismatch
from tools.checks.node_software import NodeSoftwareConfig, check_node_software_fault
from tools.checks.node_unresponsive import UnresponsiveConfig, check_node_not_responding
from tools.checks.pending import PendingConfig, check_job_pending_blocked
from tools.checks.silent_corruption import NanConfig, check_nan_on_one_node
from tools.checks.storage_full import StorageFullConfig, check_storage_full
from tools.checks.storage_unavailable import LustreUnavailableConfig, check_lustre_unavailable
from tools.checks.stuck_completing import StuckCompletingConfig, check_job_stuck_completing
from tools.checks.timeout import TimeoutConfig, check_job_timeout_without_checkpoint
from tools.checks.user_code import UserCodeConfig, check_job_user_code_error
from tools.errors import ConfigError
from tools.facts import Facts
from tools.models.findings import Finding

__all__ = ["CHECKS", "run_checks", "CheckSpec", "SiteCheck"]

CHECKS: dict[str, CheckSpec[Any]] = {
    "gpu_xid": CheckSpec(fn=check_gpu_xid, config=XidConfig, description="GPU hardware Xids, ECC DBE, fallen off the bus"),
    "interconnect_link_down": CheckSpec(fn=check_interconnect_link_down, config=InterconnectConfig,
                                        description="InfiniBand link down / NVLink Xid 74"),
    "nccl_collective_failure": CheckSpec(fn=check_nccl_collective_failure, config=NcclConfig,
                                         description="NCCL timeouts and remote errors in job logs"),
    "gpu_straggler": CheckSpec(fn=check_gpu_straggler, config=StragglerConfig,
                               description="one node's GPUs far below its job peers"),
    "gpu_thermal_throttle": CheckSpec(fn=check_gpu_thermal_throttle, config=ThrottleConfig,
                                      description="clocks held down by thermal / power limits"),
    "mdt_metadata_storm": CheckSpec(fn=check_mdt_metadata_storm, config=MetadataConfig,
                                    description="MDT metadata op rate over threshold, attributed by job_stats"),
    "storage_full": CheckSpec(fn=check_storage_full, config=StorageFullConfig,
                              description="OST/MDT blocks or inodes full, ENOSPC in job logs"),
    "job_cuda_oom": CheckSpec(fn=check_job_cuda_oom, config=GpuOomConfig, description="CUDA out of memory in job logs"),
    "node_host_oom": CheckSpec(fn=check_node_host_oom, config=HostOomConfig, description="kernel OOM killer on a node"),
    "job_pending_blocked": CheckSpec(fn=check_job_pending_blocked, config=PendingConfig,
                                     description="pending jobs blocked or waiting too long"),
    "node_not_responding": CheckSpec(fn=check_node_not_responding, config=UnresponsiveConfig,
                                     description="slurmd not responding"),
    "checkpoint_load_failure": CheckSpec(fn=check_checkpoint_load_failure, config=CheckpointConfig,
                                         description="checkpoint fails to load on resume"),
    "job_user_code_error": CheckSpec(fn=check_job_user_code_error, config=UserCodeConfig,
                                     description="job failed on its own exception"),
    "node_software_fault": CheckSpec(fn=check_node_software_fault, config=NodeSoftwareConfig,
                                     description="node drained for kill-task / prolog / epilog / runtime failures"),
    "job_timeout_without_checkpoint": CheckSpec(fn=check_job_timeout_without_checkpoint, config=TimeoutConfig,
                                                description="job hit its time limit with no checkpoint"),
    "lustre_unavailable": CheckSpec(fn=check_lustre_unavailable, config=LustreUnavailableConfig,
                                    description="Lustre clients lost OST/MDT connections, evictions, LNet timeouts"),
    "node_config_mismatch": CheckSpec(fn=check_node_config_mismatch, config=NodeConfigConfig,
                                      description="node registered with fewer GPUs / less memory than configured"),
    "controller_unreachable": CheckSpec(fn=check_controller_unreachable, config=ControllerConfig,
                                        description="Slurm commands cannot reach slurmctld"),
    "job_stuck_completing": CheckSpec(fn=check_job_stuck_completing, config=StuckCompletingConfig,
                                      description="job stuck in COMPLETING, hung tasks"),
    "nan_on_one_node": CheckSpec(fn=check_nan_on_one_node, config=NanConfig,
                                 description="NaN losses only from one node's ranks"),
    "io_bandwidth_bound": CheckSpec(fn=check_io_bandwidth_bound, config=IoBoundConfig,
                                    description="one job saturates OST bandwidth while GPUs wait"),
    "input_pipeline_bound": CheckSpec(fn=check_input_pipeline_bound, config=InputPipelineConfig,
                                      description="all of a job's GPUs evenly under-used"),
    "k8s_node_not_ready": CheckSpec(fn=check_k8s_node_not_ready, config=K8sNodeNotReadyConfig,
                                    description="Kubernetes node Ready=False/Unknown (kubelet NotReady)"),
    "k8s_gpu_capacity": CheckSpec(fn=check_k8s_gpu_capacity, config=K8sGpuCapacityConfig,
                                  description="pods Pending on Insufficient nvidia.com/gpu; unhealthy GPUs vs a full cluster"),
    "k8s_image_pull": CheckSpec(fn=check_k8s_image_pull, config=K8sImagePullConfig,
                                description="ErrImagePull / ImagePullBackOff"),
    "k8s_crash_loop": CheckSpec(fn=check_k8s_crash_loop, config=K8sCrashLoopConfig,
                                description="CrashLoopBackOff, OOMKilled or CUDA OOM containers"),
    "k8s_device_plugin": CheckSpec(fn=check_k8s_device_plugin, config=K8sDevicePluginConfig,
                                   description="NVIDIA device plugin / GPU stack pods failing, 0 allocatable GPUs"),
    "k8s_gpu_xid": CheckSpec(fn=check_k8s_gpu_xid, config=K8sGpuXidConfig,
                             description="GPU hardware Xid on a Kubernetes node (k8snode culprit, cordon)"),
}


class SiteCheck(BaseModel):
    """One site override: a check's arguments, or ``enabled = false`` to turn it off."""

    model_config = ConfigDict(extra="forbid")

    check: str
    args: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True


def run_checks(facts: Facts, site: Iterable[Mapping[str, Any] | SiteCheck] | None = None) -> list[Finding]:
    """Run every registered check over ``facts``; ``site`` entries override a check's arguments or
    disable it (the others run with their defaults).

    Args:
        site: entries ``{"check": id, "args": {...}, "enabled": true}`` (from warden.toml ``[[checks]]``).

    Returns:
        Findings from all checks, most confident first.

    Raises:
        ConfigError: an unknown check id or arguments that do not validate (names the check and field).
    """
    overrides: dict[str, SiteCheck] = {}
    for entry in site or ():
        try:
            sc = entry if isinstance(entry, SiteCheck) else SiteCheck.model_validate(entry)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"checks: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if sc.check not in CHECKS:
            raise ConfigError(f"checks: unknown check {sc.check!r} (known: {', '.join(CHECKS)})")
        overrides[sc.check] = sc
    findings: list[Finding] = []
    for name, spec in CHECKS.items():
        sc = overrides.get(name)
        if sc is not None and not sc.enabled:
            continue
        try:
            cfg = spec.config.model_validate(sc.args if sc else {})
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"checks.{name}.args.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        findings.extend(spec.fn(facts, cfg))
    findings.sort(key=lambda f: -f.confidence)
    return findings
