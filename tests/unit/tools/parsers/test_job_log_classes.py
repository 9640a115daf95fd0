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
