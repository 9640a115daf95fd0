"""Single-line classifiers for job logs (used by tools.parsers.joblog.job_log).

Each ``classify_*`` function looks at one message (rank prefix already removed) and returns
``(kind, exception_type, fields)`` or None. Shapes are those of PyTorch 1.x/2.x, NCCL, CUDA and
Slurm as printed in public issue threads (see tests/fixtures/job-log/SOURCES.md).
"""

from __future__ import annotations

import re
from datetime import datetime

from tools.parsers.joblog.rates import rate_fields

__all__ = [
    "Classified", "split_rank", "rank_in_text", "find_timestamp", "exception_type", "classify",
    "parse_watchdog", "progress_fields", "size_gib", "checkpoint_fields", "net_event", "fs_error", "line_host", "prefix_host",
]

Classified = tuple[str, str | None, dict[str, str]]

_RANK_PREFIXES = [
    re.compile(r"^\[rank(?P<rank>\d{1,7})\]:\s?"),  # PyTorch >= 2.2
    re.compile(r"^\[\d{1,7},(?P<rank>\d{1,7})\]<std(?:out|err)>:\s?"),  # mpirun --tag-output
    re.compile(r"^(?P<rank>\d{1,7}): "),  # srun --label
]
_RANK_IN_TEXT = re.compile(r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d{1,7})\]")
_TIMESTAMP = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?(?P<tz>Z|[+-]\d\d:?\d\d)?")
_EXC_TYPE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Abort|Failure))\b:?")

_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout")
_WORK = re.compile(r"WorkNCCL\((?P<args>.*)\)")  # greedy: "Timeout(ms)=…" holds a ")"
_RAN_FOR = re.compile(r"ran for (?P<ms>\d+) milliseconds")
_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|"
                  r"RESOURCE_EXHAUSTED: Out of memory|ResourceExhaustedError: OOM when allocating")
"""GPU memory exhausted: PyTorch's forms, XLA's (JAX: ``XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while
trying to allocate N bytes``) and TensorFlow's (``ResourceExhaustedError: OOM when allocating tensor``)."""
_OOM_OLD = re.compile(
    r"Tried to allocate (?P<tried>[\d.]+ \w+) \(GPU (?P<gpu>\d+); (?P<total>[\d.]+ \w+) total capacity; "
    r"(?P<allocated>[\d.]+ \w+) already allocated; (?P<free>[\d.]+ \w+) free;(?: [\d.]+ \w+ allowed;)? "
    r"(?P<reserved>[\d.]+ \w+) reserved in total by PyTorch"
)
_OOM_NEW = re.compile(
    r"Tried to allocate (?P<tried>[\d.]+ \w+)\. GPU (?P<gpu>\d+) has a total capac?i?ty of (?P<total>[\d.]+ \w+) "
    r"of which (?P<free>[\d.]+ \w+) is free\.(?: Including non-PyTorch memory, this process has (?P<in_use>[\d.]+ \w+) memory in use\.)?"
    r"(?: Of the allocated memory (?P<allocated>[\d.]+ \w+) is allocated by PyTorch, and (?P<unalloc>[\d.]+ \w+) is reserved by PyTorch but unallocated)?"
)
_CUDA_ERROR = re.compile(r"CUDA error: (?P<error>[^.\n]+)|(?P<cublas>CUBLAS_STATUS_\w+)|(?P<api>cudaError\w+|CUDA_ERROR_\w+)"
                         r"|(?P<nodriver>Found no NVIDIA driver on your system|no CUDA-capable device is detected|No CUDA GPUs are available"
                         r"|CUDA driver version is insufficient for CUDA runtime version|The NVIDIA driver on your system is too old|cuInit\(?\)? (?:failed|returned)[^.]*"
                         r"|CUDA (?:driver )?initialization(?: failed|: CUDA unknown error)[^.]*"
                         r"|Failed to initialize NVML: [^.]+|Unexpected error from cudaGetDeviceCount\(\)[^.]*"
                         r"|system not yet initiali[sz]ed)"
                         r"|(?P<runtime>\bcuda\w+ (?:failed|returned)[^:\n]{0,40}: (?:an illegal memory access was encountered"
                         r"|an illegal instruction was encountered|misaligned address|unspecified launch failure"
                         r"|uncorrectable ECC error encountered|device-side assert triggered|the launch timed out and was "
                         r"terminated))")
"""CUDA errors as PyTorch and the runtime's own messages print them; ``runtime`` is a CUDA API call that failed with
cudaGetErrorString's text (``cudaStreamSynchronize failed: an illegal memory access was encountered``: GROMACS,
many C++ codes)."""
_CUDA_CATEGORY = [
    (re.compile(r"uncorrectable ECC|ECC error|GPU is lost|fallen off the bus|CUDA_ERROR_ECC_UNCORRECTABLE", re.IGNORECASE),
     "hardware"),
    (re.compile(r"no CUDA-capable device|No CUDA GPUs are available|CUDA_ERROR_NO_DEVICE|cuInit|initialization failed|Found no NVIDIA driver|"
                r"CUDA unknown error|cudaGetDeviceCount|CUDA_ERROR_NOT_INITIALIZED|Failed to initialize NVML: Unknown",
                re.IGNORECASE), "device_missing"),
    (re.compile(r"driver version is insufficient|driver on your system is too old|Driver/library version mismatch|forward compatibility|"
                r"unsupported display driver|system not yet initiali[sz]ed", re.IGNORECASE), "driver"),
    (re.compile(r"illegal memory access|device-side assert|invalid argument|invalid device function|no kernel image|"
                r"misaligned address|illegal instruction|invalid configuration", re.IGNORECASE), "application"),
]
_DF_FULL = re.compile(r"^(?P<dev>/dev/\S+|\S+:/\S*)\s+\S+\s+\S+\s+\S+\s+(?P<pct>100|99)%\s+(?P<mount>/\S*)\s*$")
"""A ``df`` / ``df -h`` row the job printed, of a file system at 99-100 % (device, size, used, avail, use%, mount)."""
_HOST_NCCL = re.compile(r"^(?P<host>[A-Za-z][\w.-]{0,62}):\d+:\d+ \[\d+\]|^\[(?P<ucx>[A-Za-z][\w.-]{0,62}):\d+:\d+:\d+\]")
_HOST_NAMED = re.compile(r"\b(?:node|host(?:name)?)[:=] ?(?P<host>[A-Za-z][\w-]{0,62}\d[\w-]{0,20})\b")
_GENERIC = re.compile(r"^\s*(?:\[?(?:ERROR|FATAL|CRITICAL)\]?[: \]]|[EF]\d{4} \d\d:\d\d|.*\b(?:ERROR|FATAL)\b[:\]])"
                      r"|\b(?:Segmentation fault|core dumped|Bus error|Illegal instruction|terminate called after throwing)\b"
                      # A Python exception's last line printed without its traceback (one rank's stderr cut,
                      # a launcher echoing the child's error): "ImportError: libcudnn.so.9: cannot open ...".
                      r"|^(?:[A-Za-z_][\w]*\.){0,8}[A-Z]\w*(?:Error|Exception): \S"
                      r"|: command not found$")
_MPI_ABORT = re.compile(r"MPI_ABORT was invoked on rank \d+|application called MPI_Abort\(|\bMPI_Abort\(MPI_COMM_WORLD")
"""The program asked MPI to kill every rank (Open MPI's banner line; MPICH and Intel MPI's ``application called
MPI_Abort(MPI_COMM_WORLD, 1) - process 0``): what follows is the launcher killing the others."""
_PARAM_HASH = re.compile(r"\bHash not matching for (?P<param>[\w.]{1,200})|Parameter hashes not matching across DP replicas")
"""Megatron-LM's check of the weights across data-parallel replicas (``--check-weight-hash-across-dp-replicas-interval``):
``[Rank 35] Hash not matching for module.decoder.layers.17.mlp.linear_fc1.weight in model chunk 0``. Replicas must
hold identical weights; one whose GPUs computed wrong numbers drifts away (silent data corruption)."""
_MPI_NO_PMI = re.compile(r"not built with SLURM's PMI support|was not built with (?:PMIx?|Slurm) support", re.IGNORECASE)
"""Open MPI launched by ``srun`` without the PMI it needs (its help text: the MPI in the job's environment was built
without Slurm's PMI/PMIx): every rank aborts in MPI_Init, on any node."""
_GENERIC_BENIGN = re.compile(r"\b(?:warn(?:ing)?|deprecat\w*|0 errors?|no errors?)\b", re.IGNORECASE)
_REMOTE = re.compile(
    r"ncclRemoteError|remote process exited or there was a network error|NET/IB ?: Got completion from peer"
    r"|Connection closed by remote peer"
)
_PEER = re.compile(r"(?:from|remote) peer (?P<peer>[^\s<]+)(?:<(?P<port>\d+)>)?")
_IB_STATUS = re.compile(r"with (?:error|status=)\s?(?P<status>\d+)")
_VENDOR = re.compile(r"vendor err (?P<vendor>\d+)")
_NCCL_HOST = re.compile(r"^(?P<host>[\w.-]+):\d+:\d+ \[\d+\]")
_NCCL_ERROR = re.compile(r"NCCL WARN|NCCL error|nccl(?:System|Internal|InvalidUsage|InvalidArgument|UnhandledCuda)Error|DistBackendError")
_NCCL_VERSION = re.compile(r"NCCL version (?P<version>[\d.]+(?:\+cuda[\d.]+)?)")
_CKPT_WRITE = re.compile(
    r"PytorchStreamWriter failed|(?:fail\w*|error\w*|unable) (?:to |while |when )?(?:sav|writ)\w* (?:the )?(?:model |state )?checkpoint"
    r"|checkpoint\w* (?:save|write|saving|writing) (?:failed|error)",
    re.IGNORECASE,
)
_CKPT_LOAD = re.compile(
    r"PytorchStreamReader failed|failed finding central directory|Error\(s\) in loading state_dict|unexpected EOF"
    r"|EOFError: Ran out of input|UnpicklingError|SafetensorError|(?:fail\w*|error\w*|unable) (?:to |while |when )?(?:load|read)\w* (?:the )?checkpoint"
    # torch.distributed.checkpoint (DCP): a shard short or empty ("Unable to read N bytes at offset 0 from
    # __3_0.distcp (file size 0)"), reported by the loader as CheckpointException.
    r"|Unable to read \d+ bytes at offset \d+ from \S+\.distcp|CheckpointException ranks:",
    re.IGNORECASE,
)
_SAVING = re.compile(r"checkpoint|torch\.save|\bsav(?:e|ing)\b|\.(?:pt|pth|ckpt|safetensors|bin)\b", re.IGNORECASE)
_CKPT_SAVED = re.compile(
    r"\b(?:saved checkpoint|checkpoint (?:(?:at )?(?:step|iter(?:ation)?|epoch)[ _=-]?\d+ )?saved|saving model checkpoint|saving model to|saved model checkpoint|"
    r"saved (?:dcp|sharded|distributed|async|fsdp|deepspeed|full) checkpoint|"
    r"saved (?:state|weights) to)\b", re.IGNORECASE)
_SAVED_PATH = re.compile(
    r"\bsaved\s+(?:to\s+)?(?P<path>/[^\s'\"(),]*(?:ckpt|checkpoint|step[_-]?\d|global_step|iter_\d|epoch[_=-]?\d|"
    r"\.pt\b|\.pth\b|\.safetensors\b|\.distcp\b)[^\s'\"(),]*)", re.IGNORECASE)
"""A save naming only its path (``saved /ckpt/run/step_52000 in 216.2 s``): the path must look like a checkpoint."""
_TOOK_AFTER = re.compile(r"\s*(?:in|took)\s+(?P<s>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\b", re.IGNORECASE)
"""``in 216.2 s`` right after a saved path."""
_ABS_PATH = re.compile(r"""(?:(?<=[\s'"=:])|^)(?P<path>/[^\s'"(),]+)""")
"""A completed (or, for Lightning/HF's "saving model ... to", started) checkpoint save naming its path."""
_CKPT_SAVED_ITER = re.compile(
    r"successfully saved checkpoint (?:from|at) iteration\s+(?P<step>\d+) to (?P<path>/[^\s'\"(),\[]+)", re.IGNORECASE)
"""Megatron-LM's save line: the step is the iteration, the path the checkpoint directory."""
_CKPT_TOOK = re.compile(
    r"(?:(?:finished|done) saving (?:the )?checkpoint|saved (?:the )?checkpoint|"
    r"checkpoint (?:(?:at )?(?:step|iter(?:ation)?|epoch)[ _=-]?\d+ )?saved)\b.{0,80}?"
    r"(?:\bin|\btook|,)\s*(?P<s>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\b", re.IGNORECASE)
"""A save that says how long it took (torchtitan's ``Finished saving the checkpoint … in 701.20 seconds``,
``saved … (98.2 GB, 266.4s)``): the seconds the job stood still when the save is synchronous."""
_CKPT_STEP = re.compile(r"(?:global_step|step|checkpoint|iter)[_=-]?(?P<n>\d+)|epoch[_=-]?(?P<e>\d+)", re.IGNORECASE)
_FAILURE_WORDS = re.compile(r"\b(?:error|fail(?:ed|ure)?|exception|cannot|unable)\b", re.IGNORECASE)
_ENOSPC = re.compile(r"No space left on device|\bENOSPC\b|Errno 28\b|errno 28\b|Disk quota exceeded|\bEDQUOT\b|Errno 122\b")
_NAN = re.compile(
    r"\b(?P<metric>(?:\w+_)?loss|grad[_ ]?norm)\b['\"]?\s*(?:[:=]|\bis\b)?\s*\(?(?P<value>[-+]?nan|[-+]?inf(?:inity)?)\b",
    re.IGNORECASE,
)
_SLURM_CANCEL = re.compile(
    r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\d._a-z]+) ON (?P<node>\S+) (?P<state>CANCELLED|FAILED)"
    r"(?: AT (?P<at>\S+))?(?: DUE TO (?P<reason>[A-Z ]+?))?(?: \*\*\*|$)"
)
_SLURM_CLIENT = re.compile(
    r"^(?:slurm_load_\w+(?: error)?|(?:squeue|sinfo|sbatch|srun|salloc|scontrol|sacct|sdiag)(?:: error)?):.*"
    r"(?:Unable to contact slurm controller|Socket timed out on send/recv|Zero Bytes were transmitted)",
    re.IGNORECASE)
_CTLD_PING = re.compile(r"^Slurmctld\((?P<role>primary|backup)\) at (?P<host>[\w.-]+) is (?P<state>UP|DOWN)\b")
_SRUN_EXIT = re.compile(r"srun: error: (?P<node>[\w.-]+): tasks? (?P<tasks>[\d,-]+): (?P<status>.+?)\s*$")
_XLA_TRIED = re.compile(r"Out of memory while trying to allocate (?P<bytes>\d{1,16}) bytes")
_SLURM_OOM = re.compile(r"Detected (?P<n>\d+) oom[-_]kill event")
_SLURM_LINE = re.compile(r"^(?:slurmstepd(?:-\S+)?: (?:error|\*\*\*)|srun: (?:error|Job step aborted|forcing job termination)|.*\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED)")
_STEP = re.compile(r"\b(?:global_step|step|iter(?:ation)?)\b\s*[:=]?\s*(?P<step>\d{1,12})\b", re.IGNORECASE)
_LOSS = re.compile(r"\b(?P<name>(?:lm |train_|train |val_)?loss)\b['\"]?\s*[:=]?\s*(?P<loss>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)\b", re.IGNORECASE)
_EPOCH = re.compile(r"\bepoch\b['\"]?\s*[:=]?\s*(?P<epoch>\d{1,9})\b", re.IGNORECASE)
_UNIT_GIB = {"B": 1 / 1024**3, "BYTES": 1 / 1024**3, "KIB": 1 / 1024**2, "MIB": 1 / 1024, "GIB": 1.0, "TIB": 1024.0}


def split_rank(line: str) -> tuple[int | None, str]:
    """(global rank from a launcher prefix, the line without it)."""
    for rx in _RANK_PREFIXES:
        m = rx.match(line)
        if m:
            return int(m["rank"]), line[m.end():]
    return None, line


def rank_in_text(message: str) -> int | None:
    if "Rank " not in message:  # what the pattern needs, tested in C: most lines name no rank
        return None
    m = _RANK_IN_TEXT.search(message)
    return int(m["rank"]) if m else None


def find_timestamp(message: str) -> datetime | None:
    """A ``YYYY-MM-DD[ T]HH:MM:SS`` timestamp in the first 80 characters. A line without a zone is
    taken as UTC (the convention of Warden's snapshots), so every timestamp compares with
    ``captured_at``."""
    m = _TIMESTAMP.search(message[:80])
    if not m:
        return None
    frac = (m["frac"] or "0")[:6].ljust(6, "0")
    tz = m["tz"] or ""
    if tz and tz != "Z" and ":" not in tz:
        tz = tz[:3] + ":" + tz[3:]
    try:
        return datetime.fromisoformat(f"{m['date']}T{m['time']}.{frac}{'+00:00' if tz in ('Z', '') else tz}")
    except ValueError:
        return None


def size_gib(text: str) -> str:
    """``10.84 GiB`` / ``32.00 MiB`` / ``0 bytes`` -> GiB with two decimals, as a string."""
    num, unit = text.split()
    return f"{float(num) * _UNIT_GIB.get(unit.upper(), 1.0):.2f}"


def exception_type(message: str) -> str | None:
    m = _EXC_TYPE.match(message.strip())
    return m["type"] if m else None


def parse_watchdog(text: str) -> dict[str, str]:
    """Fields of a (joined) NCCL watchdog timeout message."""
    fields: dict[str, str] = {}
    work = _WORK.search(text)
    if work:
        args = dict(part.strip().split("=", 1) for part in work["args"].split(",") if "=" in part)
        for key, name in (("SeqNum", "seq"), ("OpType", "op"), ("NumelIn", "numel"), ("NumelOut", "numel_out"), ("Timeout(ms)", "timeout_ms")):
            if key in args:
                fields[name] = args[key].strip()[:40]
    ran = _RAN_FOR.search(text)
    if ran:
        fields["ran_for_ms"] = ran["ms"]
    return fields


def progress_fields(message: str) -> dict[str, str] | None:
    """step, loss and epoch of a training progress line (and the rates it prints: rates.rate_fields), or None.

    A line is progress when it names a step/iteration together with a loss or epoch, or an
    epoch together with a loss (epoch-only logs such as ``epoch 003 | train_loss 0.41``).
    """
    step, loss, epoch = _STEP.search(message), _LOSS.search(message), _EPOCH.search(message)
    if not ((step and (loss or epoch)) or (epoch and loss)):
        return None
    fields: dict[str, str] = {}
    if step:
        fields["step"] = step["step"]
    if loss:
        fields["loss"] = loss["loss"]
    if epoch:
        fields["epoch"] = str(int(epoch["epoch"]))
    return {**fields, **rate_fields(message)}


def _oom(message: str) -> Classified:
    fields: dict[str, str] = {}
    old, new = _OOM_OLD.search(message), _OOM_NEW.search(message)
    if old:
        for key in ("tried", "total", "allocated", "free", "reserved"):
            fields[f"{key}_gib"] = size_gib(old[key])
        fields["gpu"] = old["gpu"]
    elif new:
        for key in ("tried", "total", "free", "allocated", "in_use"):
            if new[key]:
                fields[f"{key}_gib"] = size_gib(new[key])
        if new["allocated"] and new["unalloc"]:
            fields["reserved_unallocated_gib"] = size_gib(new["unalloc"])
            fields["reserved_gib"] = f"{float(fields['allocated_gib']) + float(fields['reserved_unallocated_gib']):.2f}"
        fields["gpu"] = new["gpu"]
    elif xla := _XLA_TRIED.search(message):
        fields["tried_gib"] = f"{int(xla['bytes']) / 2**30:.2f}"
    return "cuda_oom", exception_type(message), fields


def _slurm(message: str) -> Classified:
    fields: dict[str, str] = {}
    m = _SLURM_CANCEL.search(message)
    if m:
        fields = {k: v.strip() for k, v in m.groupdict().items() if v}
        fields["id"] = fields["id"][:40]
    m2 = _SRUN_EXIT.search(message)
    if m2:
        fields.update(node=m2["node"], tasks=m2["tasks"], status=m2["status"][:120])
        code = re.search(r"exit code (\d+)", m2["status"])
        if code:
            fields["exit_code"] = code.group(1)
    m3 = _SLURM_OOM.search(message)
    if m3:
        fields["oom_kill_events"] = m3["n"]
    return "slurm_message", None, fields


def checkpoint_fields(path: str) -> dict[str, str]:
    """``{"path": ..., "step": ...}`` for a saved checkpoint; the step (or epoch) read from the path's
    last component that carries one (``step_032000`` -> 32000, ``epoch=49-step=62500.ckpt`` -> 62500)."""
    fields = {"path": path[:400]}
    for part in reversed(path.rstrip("/").split("/")):
        matches = list(_CKPT_STEP.finditer(part))
        steps = [m["n"] for m in matches if m["n"]] or [m["e"] for m in matches if m["e"]]
        if steps:
            fields["step"] = str(int(steps[-1]))
            break
    return fields


def classify(message: str) -> list[Classified]:
    """Every event kind one message line is (at most two: ENOSPC while saving is both)."""
    ping = _CTLD_PING.match(message)
    if ping:  # `scontrol ping` output kept in a log or transcript
        return [("slurm_message", None, {"what": "controller_ping", "controller": ping["host"],
                                         "role": ping["role"], "state": ping["state"]})]
    if _SLURM_CLIENT.match(message):
        return [("slurm_message", None, {"what": "controller_unreachable"})]
    if "couldn't chdir" in message:  # slurmstepd's own error, about the node's file system
        chdir = fs_error(message)
        if chdir is not None:
            return [chdir]
    if _SLURM_LINE.search(message):
        return [_slurm(message)]
    if _OOM.search(message):
        return [_oom(message)]
    if _REMOTE.search(message):
        fields = {}
        for rx in (_PEER, _IB_STATUS, _VENDOR, _NCCL_HOST, _NCCL_VERSION):
            m = rx.search(message)
            if m:
                fields.update({k: v for k, v in m.groupdict().items() if v})
        return [("nccl_remote_error", exception_type(message), fields)]
    net = net_event(message)
    if net is not None:
        return [net]
    if _NCCL_ERROR.search(message) and not _WATCHDOG.search(message):
        fields = {}
        for rx in (_NCCL_HOST, _NCCL_VERSION):
            m = rx.search(message)
            if m:
                fields.update(m.groupdict())
        return [("nccl_error", exception_type(message), fields)]
    cuda = _CUDA_ERROR.search(message)
    if cuda:
        error = (cuda["error"] or cuda["cublas"] or cuda["api"] or cuda["nodriver"] or cuda["runtime"]).strip()
        category = next((name for rx, name in _CUDA_CATEGORY if rx.search(error) or rx.search(message)), "unknown")
        return [("cuda_error", exception_type(message), {"error": error[:200], "category": category})]
    fs = fs_error(message)
    if fs is not None:
        return [fs]
    if _CKPT_LOAD.search(message):
        return [("checkpoint_load_failure", exception_type(message), {})]
    took = _CKPT_TOOK.search(message)
    mega = _CKPT_SAVED_ITER.search(message)
    if took and not mega and not _ABS_PATH.search(message) and not _FAILURE_WORDS.search(message):
        return [("checkpoint_saved", None, {"save_s": took["s"]})]
    if mega:
        return [("checkpoint_saved", None, {"path": mega["path"][:400], "step": str(int(mega["step"]))})]
    saved = _CKPT_SAVED.search(message) or _SAVED_PATH.search(message)
    if saved and not _FAILURE_WORDS.search(message):
        path = _ABS_PATH.search(message, saved.start(0) + 5)
        if path:
            fields = checkpoint_fields(path["path"])
            step = re.search(r"\bstep[=: ]\s*(\d+)", message, re.IGNORECASE)
            if step:
                fields["step"] = str(int(step.group(1)))
            took = took or _TOOK_AFTER.match(message, path.end())
            if took:
                fields["save_s"] = took["s"]
            return [("checkpoint_saved", None, fields)]
    found: list[Classified] = []
    if _CKPT_WRITE.search(message) or (_ENOSPC.search(message) and _SAVING.search(message)):
        found.append(("checkpoint_write_failure", exception_type(message), {}))
    df = _DF_FULL.match(message)
    if df:
        return [("enospc", None, {"error": "ENOSPC", "device": df["dev"], "mount": df["mount"], "use_pct": df["pct"]})]
    enospc = _ENOSPC.search(message)
    if enospc:
        quota = "quota" in enospc.group(0).lower() or "122" in enospc.group(0) or "EDQUOT" in enospc.group(0)
        found.append(("enospc", exception_type(message), {"error": "EDQUOT" if quota else "ENOSPC"}))
    nan = _NAN.search(message)
    if nan:
        fields = {"metric": nan["metric"].lower().replace(" ", "_"), "value": nan["value"].lower()}
        step = _STEP.search(message)
        if step:
            fields["step"] = step["step"]
        found.append(("nan_loss", None, fields))
    if not found and (ph := _PARAM_HASH.search(message)) and ph["param"]:
        return [("generic", "ParamHashMismatch", {})]
    if not found and _MPI_NO_PMI.search(message):
        return [("generic", "MPI_Init", {})]
    if not found and _MPI_ABORT.search(message):
        return [("generic", "MPI_Abort", {})]
    if not found and _GENERIC.search(message) and not _GENERIC_BENIGN.search(message):
        found.append(("generic", exception_type(message), {}))
    return found


def prefix_host(message: str) -> str | None:
    """The host of an NCCL ``host:pid:tid [dev]`` or UCX ``[host:pid:tid:n]`` line prefix, or None."""
    m = _HOST_NCCL.match(message)
    return (m["host"] or m["ucx"]) if m else None


def line_host(message: str) -> str | None:
    """The host a line says printed it: NCCL's ``host:pid:tid [dev]`` prefix or ``node: X`` / ``hostname=X``."""
    m = _HOST_NCCL.match(message)
    if m:
        return m["host"] or m["ucx"]
    m = _HOST_NAMED.search(message)
    return m["host"] if m else None


from tools.parsers.joblog.transport_lines import fs_error, net_event  # noqa: E402  (re-exported)
