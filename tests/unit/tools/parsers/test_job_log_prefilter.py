"""The job-log line gates (tools/parsers/joblog/_prefilter.py) change no result: every recorded job log in
the project, and lines of every event kind, parse to the same events and summary with and without them."""

from __future__ import annotations

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.parsers.joblog._prefilter import Gates
from tools.parsers.joblog.job_log import parse_job_log

CORPUS = files_of("job-log")


def _both(text: str, path: str = "logs/7/slurm-7.out") -> tuple[str, str]:
    fast = [e.model_dump() for e in parse_job_log(text, path=path, job="7")]
    slow = [e.model_dump() for e in parse_job_log(text, path=path, job="7", prefilter=False)]
    return repr(fast), repr(slow)  # repr: a NaN loss compares equal to itself


def test_corpus_is_the_projects_job_logs() -> None:
    assert len(CORPUS) >= 150


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_same_events_with_and_without_gates(path: str, text: str) -> None:
    fast, slow = _both(text, path)
    assert fast == slow


LINES = [
    "Slurmctld(primary) at ctl01 is DOWN",
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
    "slurmstepd: error: couldn't chdir to `/lustre/x': No such file or directory: going to /tmp instead",
    "srun: error: gpu07: task 3: Exited with exit code 1",
    "slurmstepd: error: *** JOB 42 ON gpu07 CANCELLED AT 2026-03-04T10:01:02 DUE TO TIME LIMIT ***",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB",
    "gpu07:1234:1300 [0] NCCL INFO NET/IB : Got completion from peer 10.0.0.2<4> with status=12 vendor err 129",
    "NET/IB : mlx5_0:1 Got async event : port error",
    "[1700000000.1] UCX ERROR Transport retry count exceeded on mlx5_0:1/IB",
    "libfabric:123:cxi_cq: error happened here",
    "RuntimeError: NCCL error in: ../torch/csrc, unhandled system error, NCCL version 2.18.1",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUBLAS_STATUS_EXECUTION_FAILED when calling cublasGemmEx",
    "OSError: [Errno 116] Stale file handle: '/lustre/run/ckpt'",
    "OSError: [Errno 5] Input/output error",
    "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
    "Finished saving the checkpoint (or staging if async is enabled) in 701.20 seconds.",
    "successfully saved checkpoint from iteration   2000 to /ckpt/megatron",
    "Saving model checkpoint to /ckpt/checkpoint-500",
    "OSError: [Errno 28] No space left on device while saving checkpoint",
    "step 1200 | loss nan | grad_norm inf",
    "E1204 10:22:31.123 worker.cc:88] something broke",
    "Segmentation fault (core dumped)",
    "Resuming training from checkpoint /ckpt/step_038000",
    "Restoring states from the checkpoint path at /ckpt/epoch=3.ckpt",
    "epoch 3 | step 400 | train_loss 0.4123",
    "[PG 0 Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 1800090 milliseconds before timing out.",
    "\u212aILL: non-ASCII lines keep every reader: \u017fegmentation",
    "INFO plain line without anything",
]


def test_every_event_kind_reads_the_same() -> None:
    text = "\n".join(f"2026-03-04T10:01:{i:02d} {line}" for i, line in enumerate(LINES)) + "\n"
    fast, slow = _both(text)
    assert fast == slow and "cuda_oom" in fast and "checkpoint_saved" in fast and "nan_loss" in fast


def test_gates_close_on_plain_lines_and_open_on_their_words() -> None:
    assert Gates.of("INFO data loader ready, 8 workers") == (False, False, False, False)
    assert Gates.of("step 10 loss 2.3") == (False, False, True, False)
    assert Gates.of("Loading weights from /ckpt/x") == (False, True, False, False)
    assert Gates.of("E1204 10:22:31.123 x") == (True, False, False, False)
    assert Gates.of("  Total train batch size (w. parallel, distributed & accumulation) = 2,048") == (False, False, False, True)
    assert Gates.of("caf\u00e9 anything") == (True, True, True, True)  # not ASCII: every reader runs
