"""job-log parser: transport events, file-system errors, CUDA error categories, printing hosts and generic
error lines (shapes from NCCL net_ib.cc, UCX ib_mlx5_log.c, PyTorch/CUDA runtime errors, slurmstepd)."""

from __future__ import annotations

from tools.models.logs import CudaErrorEvent, FsErrorEvent, NetEvent
from tools.parsers.joblog.job_log import parse_job_log


def _events(text: str):
    *events, summary = parse_job_log(text, path="x", job="1")
    return events, summary


def test_nccl_async_events_are_local_and_say_whether_they_recovered():
    (err, ok), _ = _events("gn-12:91226:91314 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_2:1 Got async event : port error\n"
                           "gn-12:91226:91314 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_2:1 Got async event : port active\n")
    assert isinstance(err, NetEvent) and (err.host, err.device, err.fatal, err.local) == ("gn-12", "mlx5_2:1", True, True)
    assert ok.fatal is False


def test_subnet_manager_events_are_not_link_faults():
    # ibv_event_type_str's informational events: an SM handover, a re-registration, table changes.
    lines = "".join(f"ib-g03:4410:4502 [{i}] NCCL WARN NET/IB : mlx5_{i}:1 Got async event : {what}\n"
                    for i, what in enumerate(["SM change", "client reregistration", "P_Key change", "LID change",
                                              "local catastrophic error", "port error"]))
    events, _ = _events(lines)
    assert [e.fatal for e in events] == [False, False, False, False, True, True]


def test_ucx_retries_exceeded_blame_the_far_end():
    (ev,), summary = _events("[c101:2330856:0:2330856] ib_mlx5_log.c:177  Transport retry count exceeded on mlx5_0:1/IB\n")
    assert isinstance(ev, NetEvent) and (ev.host, ev.local) == ("c101", False)
    assert summary.hosts == ["c101"]


def test_printing_hosts_are_collected_from_info_lines_too():
    _, summary = _events("0: r-a01:41000:41090 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE\n"
                         "4: r-b03:41068:41158 [0] NCCL INFO Bootstrap : Using ens3f0np0\n")
    assert summary.hosts == ["r-a01", "r-b03"]


def test_file_system_errors_with_their_paths():
    (stale, chdir), _ = _events("OSError: [Errno 116] Stale file handle: '/gpfs/proj/wm/ckpt/shard_003.pt'\n"
                                "slurmstepd: error: couldn't chdir to `/lustre/scratch/kim/exp42': No such file or "
                                "directory: going to /tmp instead\n")
    assert isinstance(stale, FsErrorEvent) and (stale.error, stale.path) == ("ESTALE", "/gpfs/proj/wm/ckpt/shard_003.pt")
    assert (chdir.error, chdir.path) == ("ENOENT_MOUNT", "/lustre/scratch/kim/exp42")


def test_cuda_errors_say_what_kind_of_cause_they_are():
    lines = ["RuntimeError: CUDA error: uncorrectable ECC error encountered",
             "RuntimeError: CUDA error: an illegal memory access was encountered",
             "RuntimeError: No CUDA GPUs are available; cuInit() failed with error 999",
             "RuntimeError: Failed to allocate device vector A (error code system not yet initialized)!"]
    events, _ = _events("\n".join(lines) + "\n")
    assert [e.category for e in events if isinstance(e, CudaErrorEvent)] == [
        "hardware", "application", "device_missing", "driver"]


def test_error_lines_no_rule_knows_are_generic_and_warnings_are_not():
    events, _ = _events("2026-01-01 10:00:00 ERROR: could not open shard index\n"
                        "Segmentation fault (core dumped)\n"
                        "UserWarning: TypedStorage is deprecated\n"
                        "WARNING: 0 errors so far\n")
    assert [e.kind for e in events] == ["generic", "generic"]


def test_exception_lines_without_traceback_and_shell_errors_are_generic():
    events, _ = _events("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n"
                        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED\n"
                        "/var/spool/slurmd/job7/slurm_script: line 3: python3.11: command not found\n"
                        "UserWarning: TypedStorage is deprecated\n"
                        "the ValueError: check passed\n")
    assert [(e.kind, e.exception_type) for e in events] == [
        ("generic", "ImportError"), ("generic", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"),
        ("generic", None)]


def test_pytorch_driver_too_old_is_a_driver_cuda_error():
    (e,), _ = _events("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")
    assert isinstance(e, CudaErrorEvent) and e.category == "driver"


def test_a_full_df_row_is_enospc_with_its_device_and_mount_and_a_half_full_one_is_nothing():
    events, _ = _events("+ df -h /local/scratch\n"
                        "Filesystem      Size  Used Avail Use% Mounted on\n"
                        "/dev/nvme0n1p1  3.5T  3.5T   20K 100% /local/scratch\n"
                        "10.0.0.5@o2ib:/scratch  2.0P  1.0P  1.0P  50% /lustre/scratch\n")
    (e,) = events
    assert (e.kind, e.device, e.mount, e.use_pct) == ("enospc", "/dev/nvme0n1p1", "/local/scratch", 100.0)


def test_aws_ofi_nccl_completion_error_is_the_printing_hosts_nic():
    (e,), _ = _events("p4d-3:51902:52410 [5] nccl_net_ofi_rdma_process_completions:513 NCCL WARN NET/OFI Request "
                      "0x7f3a5c0e1b40 completed with error. RC: 5. Error: Input/output error. Completed length: 0\n")
    assert isinstance(e, NetEvent) and e.transport == "libfabric" and e.host == "p4d-3" and e.local


def test_dcp_shard_failures_are_checkpoint_loads_of_the_checkpoint_being_resumed():
    events, _ = _events("resuming from latest checkpoint: /lustre/run/step_9500\n"
                        "[rank3]: ValueError: Unable to read 193464320 bytes at offset 0 from __3_0.distcp (file size 0)\n"
                        "[2026-11-29 06:40:10] step 9000 | saved sharded checkpoint /lustre/run/step_9000 in 41.2s\n")
    load = [e for e in events if e.kind == "checkpoint_load_failure"]
    saved = [e for e in events if e.kind == "checkpoint_saved"]
    assert [e.path for e in load] == ["/lustre/run/step_9500"] and [e.path for e in saved] == ["/lustre/run/step_9000"]


def test_an_mpi_abort_is_kept_as_the_programs_own_exit():
    # Open MPI's banner line and MPICH/Intel MPI's one-liner; the launcher's kill lines that follow are not it.
    (ev,), _ = _events("MPI_ABORT was invoked on rank 12 in communicator MPI_COMM_WORLD\n")
    assert (ev.kind, ev.exception_type) == ("generic", "MPI_Abort")
    (ev,), _ = _events("application called MPI_Abort(MPI_COMM_WORLD, 3) - process 0\n")
    assert ev.exception_type == "MPI_Abort"
    events, _ = _events("NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n")
    assert events == []


def test_xla_and_tensorflow_gpu_memory_exhaustion_is_a_cuda_oom():
    (ev,), _ = _events("[task 2] jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
                       "to allocate 16525557760 bytes.\n")
    assert ev.kind == "cuda_oom" and ev.tried_gib == 15.39
    (ev,), _ = _events("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
                       "shape[8192,50257] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n")
    assert ev.kind == "cuda_oom"


def test_host_labelled_tracebacks_are_read_per_host():
    text = ("[ln09] Traceback (most recent call last):\n[ln10] Traceback (most recent call last):\n"
            "[ln09]   File \"x.py\", line 1, in <module>\n[ln10]   File \"x.py\", line 1, in <module>\n"
            "[ln09] KeyError: 'a'\n[ln10] ValueError: bad\n")
    events, summary = _events(text)
    assert sorted(e.exception_type for e in events if e.kind == "traceback") == ["KeyError", "ValueError"]
    assert summary.rdzv_stores == 0


def test_a_cuda_api_call_failing_with_the_runtimes_own_text_is_a_cuda_error():
    for line, category in (("cudaStreamSynchronize failed: an illegal memory access was encountered", "application"),
                           ("cudaMemcpyAsync returned error 214: uncorrectable ECC error encountered", "hardware"),
                           ("cudaDeviceSynchronize failed: unspecified launch failure", "unknown")):
        (ev,), _ = _events(line + "\n")
        assert (ev.kind, ev.category) == ("cuda_error", category), line
