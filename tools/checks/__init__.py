"""Deterministic checks: parsed facts -> findings. One check per module, one registry here.

Site config overrides checks' arguments or turns checks off (``{check: gpu_xid, args: {min_events:
2}}``, ``{check: input_pipeline_bound, enabled: false}``); the arguments are validated against the
check's config model, never evaluated. A check that raises does not stop the others: it becomes an
``Unreadable(kind="check")`` record (k8sgpt's runner isolates analyzers the same way). After every check
has run, ``unexplained_signals`` lists the error-level signals none of them explained.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.checks.base import CheckSpec
from tools.checks.checkpoint_stall import CheckpointStallConfig, check_checkpoint_stall
from tools.checks.checkpoint_corrupt import CheckpointConfig, check_checkpoint_load_failure
from tools.checks.controller import ControllerConfig, check_controller_unreachable
from tools.checks.controller_probes import ControllerProbeConfig, check_controller_probe_noise
from tools.checks.fs_locking import FsLockConfig, check_fs_lock_unsupported
from tools.checks.fs_unavailable import FsUnavailableConfig, check_fs_unavailable
from tools.checks.fabric_drop import FabricDropConfig, check_fabric_drop
from tools.checks.gpu_access_lost import GpuAccessLostConfig, check_gpu_access_lost
from tools.checks.gpu_app_clocks import GpuAppClocksConfig, check_gpu_app_clocks
from tools.checks.gpu_corrected_ecc import CorrectedEccConfig, check_gpu_corrected_ecc
from tools.checks.gpu_busy_unowned import GpuBusyUnownedConfig, check_gpu_busy_unowned
from tools.checks.gpu_oom import GpuOomConfig, check_job_cuda_oom
from tools.checks.gpu_pcie_link import PcieLinkConfig, check_gpu_pcie_link
from tools.checks.gpu_straggler import StragglerConfig, check_gpu_straggler
from tools.checks.gpu_throttle import ThrottleConfig, check_gpu_thermal_throttle
from tools.checks.gpu_xid import XidConfig, check_gpu_xid
from tools.checks.host_oversubscribed import HostOversubscribedConfig, check_host_oversubscribed
from tools.checks.host_straggler import HostStragglerConfig, check_host_straggler
from tools.checks.host_thermal import HostThermalConfig, check_host_thermal_throttle
from tools.checks.host_oom import HostOomConfig, check_node_host_oom
from tools.checks.hung_task_transient import HungTaskConfig, check_hung_task_transient
from tools.checks.input_pipeline import InputPipelineConfig, check_input_pipeline_bound
from tools.checks.interconnect import InterconnectConfig, check_interconnect_link_down
from tools.checks.io_bound import IoBoundConfig, check_io_bandwidth_bound
from tools.checks.job_held import JobHeldConfig, check_job_held
from tools.checks.lustre_recovery import LustreRecoveryConfig, check_lustre_recovery
from tools.checks.job_preempted import JobPreemptedConfig, check_job_preempted
from tools.checks.k8s_container_died import K8sContainerDiedConfig, check_k8s_container_died
from tools.checks.k8s_crash_loop import K8sCrashLoopConfig, check_k8s_crash_loop
from tools.checks.k8s_device_plugin import K8sDevicePluginConfig, check_k8s_device_plugin
from tools.checks.k8s_device_resources import K8sDeviceResourcesConfig, check_k8s_device_resources
from tools.checks.k8s_driver_upgrade import K8sDriverUpgradeConfig, check_k8s_driver_upgrade
from tools.checks.k8s_gpu_capacity import K8sGpuCapacityConfig, check_k8s_gpu_capacity
from tools.checks.k8s_gpu_feature_labels import K8sGpuLabelsConfig, check_k8s_gpu_feature_labels
from tools.checks.k8s_kubelet_refusals import K8sKubeletRefusalsConfig, check_k8s_kubelet_refusals
from tools.checks.k8s_image_pull import K8sImagePullConfig, check_k8s_image_pull
from tools.checks.k8s_node_not_ready import K8sNodeNotReadyConfig, check_k8s_node_not_ready
from tools.checks.k8s_node_pressure import K8sNodePressureConfig, check_k8s_node_pressure
from tools.checks.k8s_plugin_absent import K8sPluginAbsentConfig, check_k8s_plugin_absent
from tools.checks.k8s_job_deadline import K8sJobDeadlineConfig, check_k8s_job_deadline
from tools.checks.k8s_pods_ready_timeout import PodsReadyTimeoutConfig, check_k8s_pods_ready_timeout
from tools.checks.k8s_pod_preempted import K8sPodPreemptedConfig, check_k8s_pod_preempted
from tools.checks.k8s_pod_terminating import K8sPodTerminatingConfig, check_k8s_pod_terminating
from tools.checks.k8s_pod_sandbox import K8sPodSandboxConfig, check_k8s_pod_sandbox
from tools.checks.k8s_pod_spec_unschedulable import K8sPodSpecConfig, check_k8s_pod_spec_unschedulable
from tools.checks.k8s_queue_wait import K8sQueueWaitConfig, check_k8s_queue_wait
from tools.checks.k8s_quota_exceeded import K8sQuotaConfig, check_k8s_quota_exceeded
from tools.checks.metadata_wall import MetadataConfig, check_mdt_metadata_storm
from tools.checks.nccl import NcclConfig, check_nccl_collective_failure
from tools.checks.iommu_fault import IommuConfig, check_iommu_faults
from tools.checks.nic_pcie_link import NicPcieLinkConfig, check_nic_pcie_link
from tools.checks.node_config import NodeConfigConfig, check_node_config_mismatch
from tools.checks.node_failure_history import NodeHistoryConfig, check_node_failure_history
from tools.checks.node_auth import NodeAuthConfig, check_node_auth_refused
from tools.checks.node_clock import NodeClockConfig, check_node_clock
from tools.checks.node_disk import NodeDiskConfig, check_node_local_disk
from tools.checks.node_software import NodeSoftwareConfig, check_node_software_fault
from tools.checks.node_unresponsive import UnresponsiveConfig, check_node_not_responding
from tools.checks.pause_storm import PauseStormConfig, check_pause_storm
from tools.checks.pending import PendingConfig, check_job_pending_blocked
from tools.checks.silent_corruption import NanConfig, check_nan_on_one_node
from tools.checks.storage_full import StorageFullConfig, check_storage_full
from tools.checks.stuck_completing import StuckCompletingConfig, check_job_stuck_completing
from tools.checks.throughput import ThroughputConfig, check_throughput_held
from tools.checks.timeout import TimeoutConfig, check_job_timeout_without_checkpoint
from tools.checks.unexplained import UnexplainedConfig, unexplained_signals
from tools.checks.user_code import UserCodeConfig, check_job_user_code_error
from tools.checks.xid_at_cancel import XidAtCancelConfig, check_xid_at_cancel
from tools.errors import ConfigError
from tools.facts import Facts
from tools.models.findings import Finding
from tools.models.unreadable import Unreadable

__all__ = ["CHECKS", "run_checks", "CheckSpec", "SiteCheck", "CheckRun"]

_LOGS = ("kernel_events", "job_log_events")
_GPU = ("gpu_samples", "gpu_status")
_SLURM = ("jobs", "nodes", "acct")
_K8S = ("k8s_nodes", "k8s_pods", "k8s_events")

CHECKS: dict[str, CheckSpec[Any]] = {
    "gpu_xid": CheckSpec(check_gpu_xid, XidConfig, "GPU hardware faults: Xids, lost GPUs, DCGM fault fields, CUDA hardware errors",
                         needs=_LOGS + _GPU + ("k8s_events",)),
    "gpu_corrected_ecc": CheckSpec(check_gpu_corrected_ecc, CorrectedEccConfig,
                                   "a burst of corrected (SBE) ECC errors whose remap fields or kernel log were not read",
                                   needs=_GPU),
    "gpu_access_lost": CheckSpec(check_gpu_access_lost, GpuAccessLostConfig,
                                 "jobs or containers that cannot see GPUs their node still reads (device access lost)",
                                 needs=("job_log_events",)),
    "gpu_app_clocks": CheckSpec(check_gpu_app_clocks, GpuAppClocksConfig,
                                "GPUs held down by applications clocks left set (a straggler by configuration)",
                                needs=_GPU),
    "gpu_busy_unowned": CheckSpec(check_gpu_busy_unowned, GpuBusyUnownedConfig,
                                  "a GPU at work on a node where the scheduler runs nothing (inconclusive)",
                                  needs=_GPU),
    "gpu_pcie_link": CheckSpec(check_gpu_pcie_link, PcieLinkConfig,
                               "a GPU's PCIe link trained narrower/slower than it can run, or replaying packets",
                               needs=("gpu_status", "gpu_samples", "kernel_events")),
    "iommu_fault": CheckSpec(check_iommu_faults, IommuConfig,
                             "a node whose IOMMU refuses its GPUs' or NICs' DMA (DMAR / AMD-Vi faults), hanging P2P traffic",
                             needs=("kernel_events",)),
    "nic_pcie_link": CheckSpec(check_nic_pcie_link, NicPcieLinkConfig,
                               "a network adapter on a PCIe link trained below its capability", needs=("kernel_events",)),
    "interconnect_link_down": CheckSpec(check_interconnect_link_down, InterconnectConfig,
                                        "InfiniBand/RoCE link down or flapping, NVLink errors, IB counters, NIC transport errors",
                                        needs=_LOGS + ("gpu_samples",)),
    "pause_storm": CheckSpec(check_pause_storm, PauseStormConfig,
                             "a host flooding a RoCE fabric with PFC pause frames (NIC pause-storm prevention)",
                             needs=("gpu_samples",)),
    "fabric_drop": CheckSpec(check_fabric_drop, FabricDropConfig,
                             "many nodes' fabric ports down in the same moment: a switch, not the nodes",
                             needs=("kernel_events",)),
    "nccl_collective_failure": CheckSpec(check_nccl_collective_failure, NcclConfig,
                                         "NCCL timeouts and remote errors in job logs", needs=("job_log_events",)),
    "gpu_straggler": CheckSpec(check_gpu_straggler, StragglerConfig, "one node's GPUs far below its job peers",
                               needs=("gpu_samples",)),
    "host_straggler": CheckSpec(check_host_straggler, HostStragglerConfig,
                                "one node of a job whose CPUs run far slower than its peers' (cpufreq governor, clock)",
                                needs=("gpu_samples", "jobs")),
    "host_oversubscribed": CheckSpec(check_host_oversubscribed, HostOversubscribedConfig,
                                     "one node of a multi-node job whose CPUs are oversubscribed while its peers' are not",
                                     needs=("nodes",)),
    "host_thermal_throttle": CheckSpec(check_host_thermal_throttle, HostThermalConfig,
                                       "a node whose CPUs the kernel keeps throttling for heat", needs=("kernel_events",)),
    "k8s_plugin_absent": CheckSpec(check_k8s_plugin_absent, K8sPluginAbsentConfig,
                                   "a node whose GPUs the host sees but where the device plugin never ran",
                                   needs=("k8s_nodes", "k8s_pods")),
    "k8s_queue_wait": CheckSpec(check_k8s_queue_wait, K8sQueueWaitConfig,
                                "a Job held suspended by its queue manager (Kueue) for quota", needs=("k8s_events",)),
    "k8s_device_resources": CheckSpec(check_k8s_device_resources, K8sDeviceResourcesConfig,
                                      "a node whose device plugin registered an empty pool of a resource its peers offer",
                                      needs=("k8s_nodes",)),
    "k8s_kubelet_refusals": CheckSpec(check_k8s_kubelet_refusals, K8sKubeletRefusalsConfig,
                                      "a kubelet that admits pods to devices it lacks, cannot mount a volume only it fails on, or whose "
                                      "Topology Manager rejects pods its peers run",
                                      needs=("k8s_events",)),
    "gpu_thermal_throttle": CheckSpec(check_gpu_thermal_throttle, ThrottleConfig,
                                      "clocks held down by thermal / power limits", needs=_GPU),
    "mdt_metadata_storm": CheckSpec(check_mdt_metadata_storm, MetadataConfig,
                                    "MDT metadata op rate over threshold, attributed by job_stats", needs=("md_stats", "job_stats")),
    "storage_full": CheckSpec(check_storage_full, StorageFullConfig,
                              "OST/MDT blocks or inodes full, ENOSPC in job logs, a service host's disk full",
                              needs=("lfs_df", "job_log_events", "kernel_events")),
    "job_cuda_oom": CheckSpec(check_job_cuda_oom, GpuOomConfig, "CUDA out of memory in job logs", needs=("job_log_events",)),
    "node_host_oom": CheckSpec(check_node_host_oom, HostOomConfig,
                               "kernel OOM killer on a node, or Slurm killing a job over its memory limit",
                               needs=("kernel_events", "job_log_events")),
    "job_pending_blocked": CheckSpec(check_job_pending_blocked, PendingConfig, "pending jobs blocked or waiting too long",
                                     needs=("jobs",)),
    "job_held": CheckSpec(check_job_held, JobHeldConfig, "held jobs (launch failed requeued held, JobHeldAdmin/User, BadConstraints)",
                          needs=("jobs",)),
    "job_preempted": CheckSpec(check_job_preempted, JobPreemptedConfig, "jobs killed or requeued by preemption",
                               needs=("jobs", "acct", "job_log_events")),
    "k8s_job_deadline": CheckSpec(check_k8s_job_deadline, K8sJobDeadlineConfig,
                                  "a Kubernetes Job ended by activeDeadlineSeconds before it saved a checkpoint",
                                  needs=("k8s_workloads", "k8s_events")),
    "k8s_pods_ready_timeout": CheckSpec(check_k8s_pods_ready_timeout, PodsReadyTimeoutConfig,
                                        "a job Kueue keeps evicting because its pods are not all Ready in time",
                                        needs=("k8s_events",)),
    "k8s_pod_preempted": CheckSpec(check_k8s_pod_preempted, K8sPodPreemptedConfig,
                                   "pods the kube-scheduler preempted for higher-priority pods", needs=("k8s_events",)),
    "node_not_responding": CheckSpec(check_node_not_responding, UnresponsiveConfig, "slurmd not responding", needs=("nodes",)),
    "checkpoint_load_failure": CheckSpec(check_checkpoint_load_failure, CheckpointConfig, "checkpoint fails to load on resume",
                                         needs=("job_log_events",)),
    "job_user_code_error": CheckSpec(check_job_user_code_error, UserCodeConfig, "job failed on its own exception",
                                     needs=("job_log_events", "kernel_events")),
    "xid_at_cancel": CheckSpec(check_xid_at_cancel, XidAtCancelConfig,
                               "Xid 43/45 logged as a job was cancelled: the kill's echo, not the GPU",
                               needs=("kernel_events", "acct")),
    "node_auth_refused": CheckSpec(check_node_auth_refused, NodeAuthConfig,
                                   "slurmctld refusing a node's messages as unauthentic (its MUNGE key differs)",
                                   needs=("kernel_events",)),
    "node_clock": CheckSpec(check_node_clock, NodeClockConfig,
                            "a node whose drifted clock makes every job credential look expired or rewound",
                            needs=("kernel_events", "job_log_events")),
    "node_local_disk": CheckSpec(check_node_local_disk, NodeDiskConfig,
                                 "a node whose own disk fails (medium errors, its file system aborted read-only)",
                                 needs=("kernel_events",)),
    "node_software_fault": CheckSpec(check_node_software_fault, NodeSoftwareConfig,
                                     "node software failing: prolog/epilog/SPANK, kill task, Fabric Manager, container runtime",
                                     needs=("nodes", "node_reasons", "kernel_events")),
    "node_failure_history": CheckSpec(check_node_failure_history, NodeHistoryConfig,
                                      "a node where many jobs fail within seconds (black hole) or several jobs fail over days",
                                      needs=("acct",)),
    "throughput_held": CheckSpec(check_throughput_held, ThroughputConfig,
                                 "longer steps at the previous run's samples/s: a bigger batch, not a slowdown",
                                 needs=("job_log_events",)),
    "job_timeout_without_checkpoint": CheckSpec(check_job_timeout_without_checkpoint, TimeoutConfig,
                                                "job hit its time limit with no checkpoint", needs=("acct", "jobs", "job_log_events")),
    "controller_probe_noise": CheckSpec(check_controller_probe_noise, ControllerProbeConfig,
                                        "slurmctld Zero Bytes errors from a TCP health check's regular probes",
                                        needs=("kernel_events",)),
    "fs_lock_unsupported": CheckSpec(check_fs_lock_unsupported, FsLockConfig,
                                     "file locks failing with ENOSYS on one node's mount (noflock/nolock)",
                                     needs=("job_log_events",)),
    "hung_task_transient": CheckSpec(check_hung_task_transient, HungTaskConfig,
                                     "one burst of hung-task reports while the node's jobs log on: a slow write",
                                     needs=("kernel_events",)),
    "fs_unavailable": CheckSpec(check_fs_unavailable, FsUnavailableConfig,
                                "file system unreachable: one node's client down, or servers down for everyone",
                                needs=("kernel_events", "job_log_events", "lfs_df")),
    "lustre_recovery": CheckSpec(check_lustre_recovery, LustreRecoveryConfig,
                                 "a Lustre target that went away and came back: by the book, or at the cost of evictions and jobs",
                                 needs=("kernel_events",)),
    "node_config_mismatch": CheckSpec(check_node_config_mismatch, NodeConfigConfig,
                                      "node registered with fewer GPUs / less memory than configured", needs=("nodes",)),
    "controller_unreachable": CheckSpec(check_controller_unreachable, ControllerConfig, "Slurm commands cannot reach slurmctld",
                                        needs=("slurm_errors", "job_log_events", "other", "kernel_events")),
    "job_stuck_completing": CheckSpec(check_job_stuck_completing, StuckCompletingConfig, "job stuck in COMPLETING, hung tasks",
                                      needs=("jobs",)),
    "nan_on_one_node": CheckSpec(check_nan_on_one_node, NanConfig, "NaN losses only from one node's ranks",
                                 needs=("job_log_events",)),
    "io_bandwidth_bound": CheckSpec(check_io_bandwidth_bound, IoBoundConfig, "one job saturates OST bandwidth while GPUs wait",
                                    needs=("job_stats",)),
    "checkpoint_stall": CheckSpec(check_checkpoint_stall, CheckpointStallConfig,
                                  "a job standing still for a large share of its time writing checkpoints",
                                  needs=("job_log_events",)),
    "input_pipeline_bound": CheckSpec(check_input_pipeline_bound, InputPipelineConfig, "all of a job's GPUs evenly under-used",
                                      needs=("gpu_samples",)),
    "k8s_node_not_ready": CheckSpec(check_k8s_node_not_ready, K8sNodeNotReadyConfig,
                                    "Kubernetes node Ready=False/Unknown (kubelet NotReady)", needs=("k8s_nodes", "k8s_events")),
    "k8s_gpu_capacity": CheckSpec(check_k8s_gpu_capacity, K8sGpuCapacityConfig,
                                  "pods Pending on Insufficient nvidia.com/gpu; unhealthy GPUs vs a full cluster", needs=_K8S),
    "k8s_image_pull": CheckSpec(check_k8s_image_pull, K8sImagePullConfig, "ErrImagePull / ImagePullBackOff",
                                needs=("k8s_pods", "k8s_events")),
    "k8s_crash_loop": CheckSpec(check_k8s_crash_loop, K8sCrashLoopConfig, "CrashLoopBackOff, OOMKilled or CUDA OOM containers",
                                needs=("k8s_pods",)),
    "k8s_device_plugin": CheckSpec(check_k8s_device_plugin, K8sDevicePluginConfig,
                                   "NVIDIA GPU stack pods (device plugin, validators, toolkit, DCGM) failing, 0 allocatable GPUs",
                                   needs=_K8S),
    "k8s_pod_spec_unschedulable": CheckSpec(check_k8s_pod_spec_unschedulable, K8sPodSpecConfig,
                                            "Pending pods whose nodeSelector/affinity matches no node or that lack the "
                                            "toleration of the nodes with room", needs=("k8s_pods", "k8s_events")),
    "k8s_gpu_feature_labels": CheckSpec(check_k8s_gpu_feature_labels, K8sGpuLabelsConfig,
                                        "a GPU node GPU feature discovery left without its nvidia.com/gpu.* labels",
                                        needs=("k8s_nodes",)),
    "k8s_quota_exceeded": CheckSpec(check_k8s_quota_exceeded, K8sQuotaConfig,
                                    "a namespace's ResourceQuota (requests.nvidia.com/gpu) rejects a workload's pods",
                                    needs=("k8s_events", "k8s_workloads")),
    "k8s_pod_terminating": CheckSpec(check_k8s_pod_terminating, K8sPodTerminatingConfig,
                                     "pods deleted long past their grace period that the kubelet cannot stop (inconclusive)",
                                     needs=("k8s_pods",)),
    "k8s_pod_sandbox": CheckSpec(check_k8s_pod_sandbox, K8sPodSandboxConfig,
                                 "pods a node's container runtime or CNI cannot create a sandbox for (runtime handler "
                                 "missing, CNI failing)", needs=("k8s_events", "kernel_events")),
    "k8s_node_pressure": CheckSpec(check_k8s_node_pressure, K8sNodePressureConfig,
                                   "kubelet DiskPressure / MemoryPressure and the pods it evicted", needs=_K8S),
    "k8s_driver_upgrade": CheckSpec(check_k8s_driver_upgrade, K8sDriverUpgradeConfig,
                                    "nodes the GPU Operator's upgrade controller cordoned for a driver upgrade (normal), "
                                    "or where that upgrade failed", needs=("k8s_nodes",)),
    "k8s_container_died": CheckSpec(check_k8s_container_died, K8sContainerDiedConfig,
                                    "a container that restarted after a non-zero exit nothing read explains "
                                    "(exit 137 with reason Error)", needs=("k8s_pods",)),
}


class SiteCheck(BaseModel):
    """One site override: a check's arguments, or ``enabled = false`` to turn it off."""

    model_config = ConfigDict(extra="forbid")

    check: str
    args: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True


class CheckRun(BaseModel):
    """What one run of the checks produced: findings, most confident first, and checks that raised."""

    findings: list[Finding]
    failed: list[Unreadable] = Field(default_factory=list)


def _overrides(site: Iterable[Mapping[str, Any] | SiteCheck] | None) -> dict[str, SiteCheck]:
    out: dict[str, SiteCheck] = {}
    for entry in site or ():
        try:
            sc = entry if isinstance(entry, SiteCheck) else SiteCheck.model_validate(entry)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"checks: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if sc.check not in CHECKS and sc.check != "unexplained_signals":
            raise ConfigError(f"checks: unknown check {sc.check!r} (known: {', '.join(CHECKS)}, unexplained_signals)")
        out[sc.check] = sc
    return out


def _applies(facts: Facts, spec: CheckSpec[Any]) -> bool:
    """False when every Facts list the check reads is empty (skipped cheaply)."""
    return not spec.needs or any(getattr(facts, name) for name in spec.needs)


def run_checks(facts: Facts, site: Iterable[Mapping[str, Any] | SiteCheck] | None = None) -> CheckRun:
    """Run every registered check over ``facts``, then ``unexplained_signals`` over their findings.

    Args:
        site: entries ``{"check": id, "args": {...}, "enabled": true}`` (from warden.toml ``[[checks]]``).

    Returns:
        The findings, most confident first, and an ``Unreadable(kind="check")`` per check that raised
        (the others still ran).

    Raises:
        ConfigError: an unknown check id or arguments that do not validate (names the check and field).
    """
    overrides = _overrides(site)
    configs: dict[str, BaseModel] = {}
    for name, spec in CHECKS.items():
        sc = overrides.get(name)
        try:
            configs[name] = spec.config.model_validate(sc.args if sc else {})
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"checks.{name}.args.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    findings: list[Finding] = []
    failed: list[Unreadable] = []
    for name, spec in CHECKS.items():
        sc = overrides.get(name)
        if (sc is not None and not sc.enabled) or not _applies(facts, spec):
            continue
        try:
            findings.extend(spec.fn(facts, configs[name]))
        except Exception as e:  # noqa: BLE001 - one broken check must not hide the others' findings
            failed.append(Unreadable(kind="check", check=name, reason=f"{type(e).__name__}: {str(e)[:200]}"))
    sc = overrides.get("unexplained_signals")
    if sc is None or sc.enabled:
        try:
            extra = unexplained_signals(facts, findings, UnexplainedConfig.model_validate(sc.args if sc else {}))
        except ValidationError as e:
            raise ConfigError(f"checks.unexplained_signals.args: {e.errors()[0]['msg']}") from None
        if extra is not None:
            findings.append(extra)
    findings.sort(key=lambda f: -f.confidence)
    return CheckRun(findings=findings, failed=failed)
