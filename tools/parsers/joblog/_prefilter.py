"""Which per-line readers of a job log a line can give anything to (performance only).

A training log is mostly progress and informational lines; the line classifier
(``job_log_lines.classify``, some twenty patterns, several case-insensitive alternations with no
literal to start from), the resume detector and the progress reader each need words that most lines
do not hold. ``Gates.of`` tests a line's lowered text once against the words each needs and says
which can return something; a reader whose words are absent is not called, and would have returned
nothing (no event, no resume, no progress).

Every pattern those readers take a line by requires one of its gate's words (case-insensitively):
a pattern added to them must add its word here. tests/unit/tools/parsers/test_job_log_prefilter.py
parses every fixture and bundled snapshot job log with and without the gates and fails on any
difference. The gates are used only on ASCII lines, where lowering matches Python's
case-insensitive matching exactly (it also folds the Kelvin sign, the long s and dotted/dotless i
onto ASCII letters).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from tools.parsers.keywords import any_word

__all__ = ["Gates", "CLASSIFY_WORDS"]

CLASSIFY_WORDS: tuple[str, ...] = (
    # Slurm: scontrol ping, client errors, slurmstepd/srun lines, job/step cancellations, chdir failures
    "slurmctld", "slurm controller", "socket timed out", "zero bytes", "couldn't chdir", "slurmstepd", "srun:", "***",
    # CUDA OOM and CUDA/driver errors
    "out of memory", "outofmemory", "cuda error", "cudaerror", "cuda_error", "cuda-capable", "cuda driver",
    "cuda initialization", "cudagetdevicecount", "no cuda gpus", "cublas_status", "nvidia driver", "cuinit", "nvml",
    "system not yet initiali", "illegal memory access", "illegal instruction", "misaligned address",
    "unspecified launch failure", "launch timed out", "ecc error encountered", "device-side assert",
    # NCCL errors (NCCL WARN, ncclXxxError and DistBackendError hold "error"), remote/network errors,
    # IB/UCX/libfabric transport events
    "nccl warn", "remote", "completion from peer", "distbackend", "async event", "ucx", "retry count exceeded", "ibv_wc_",
    "catastrophic", "libfabric", "fi_cq_readerr", "cxi_", "efa_",
    # file-system errors (ESTALE, ENOTCONN, EIO) and ENOSPC/EDQUOT
    "stale", "errno", "estale", "enotconn", "transport endpoint", "input/output", "eio", "no space left", "enospc",
    "quota", "edquot",
    # checkpoints: saved, save took, load and write failures
    "checkpoint", "pytorchstream", "central directory", "loading state_dict", "unexpected eof", "eoferror",
    "unpickling", "safetensor", "saving model", "saved state", "saved weights", "saved /", "saved to /",
    # generic error lines (_GENERIC), exception lines printed without a traceback, a shell's missing program
    "error", "fatal", "critical", "segmentation fault", "core dumped", "illegal instruction", "terminate called",
    "exception", "command not found", "mpi_abort", "pmi",
    # Megatron's weight-hash check across data-parallel replicas
    "hash not matching", "hashes not matching",
    # a df row of a file system at 99-100 %, aws-ofi-nccl completions, DCP shard reads
    "99%", "100%", "net/ofi", "distcp",
)
"""Lowercase words one of which every line ``classify`` takes holds, besides the two shapes below."""

_CLASSIFY = any_word(CLASSIFY_WORDS)
_INF = re.compile(r"inf(?:inity)?\b")
_GLOG = re.compile(r"^\s*[EF]\d{4} \d\d:\d\d")
"""glog's error/fatal prefix (``E1204 10:22:31.123 ...``), which _GENERIC takes with no word."""


class Gates(NamedTuple):
    """Whether each per-line reader can take the line."""

    classify: bool
    resume: bool
    progress: bool
    batch: bool

    @staticmethod
    def of(message: str) -> Gates:
        """The gates of one message (rank prefix removed, stripped); all open for a non-ASCII line."""
        if not message.isascii():
            return _OPEN
        low = message.lower()
        # _NAN: a loss or gradient-norm metric that is nan or inf(inity) as a word ("INFO" is not)
        nan = ("loss" in low or "norm" in low) and ("nan" in low or _INF.search(low) is not None)
        classify = nan or _CLASSIFY.search(low) is not None or _GLOG.match(message) is not None
        # _RESUMING: "restoring states from the checkpoint path", "resum(e|ing) ... from", "loading ..."
        resume = "checkpoint" in low or "resum" in low or "loading" in low
        # progress_fields: a step/iteration with a loss or epoch, or an epoch with a loss
        step, loss, epoch = "step" in low or "iter" in low, "loss" in low, "epoch" in low
        # rates.global_batch ("total train batch size", "global batch size", "train_batch_size") and
        # rates.time_signal ("#SBATCH --signal=...", an echoed "sbatch --signal")
        batch = "batch" in low or "--signal" in low
        return Gates(classify, resume, (step and (loss or epoch)) or (epoch and loss), batch)


_OPEN = Gates(True, True, True, True)
