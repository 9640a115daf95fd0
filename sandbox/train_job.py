#!/usr/bin/env python3
"""A training-like Slurm batch job for the sandbox (stdlib only; `up` installs it as <state>/bin/train.py).

It logs one line per step, ``[<ISO-8601 UTC>] step=N loss=X``, to standard output (the Slurm
``--output`` file), and every ``--ckpt-every`` steps writes a checkpoint folder::

    <run-dir>/checkpoints/step_000010/model.pt     random bytes standing in for weights
    <run-dir>/checkpoints/step_000010/optim.pt
    <run-dir>/checkpoints/step_000010/manifest.json
        {"step": 10, "job_id": "12", "node": "gpu01", "created_at": "...",
         "files": [{"path": "model.pt", "size_bytes": 262144, "sha256": "…"}, …]}

A checkpoint folder is written under a temporary name and renamed, so a listed one is complete.

Faults (sandbox/faults.py) drive it from outside:
  * ``--resume``: load the newest checkpoint; when its bytes do not match the manifest, print the
    error PyTorch prints for a truncated file and exit 1.
  * ``--oom-at-step N``: print a CUDA out-of-memory traceback at step N and exit 1.
  * ``WARDEN_RESUME_FROM=<checkpoint folder>`` in the environment (what Warden's
    resubmit_from_checkpoint exports): resume from exactly that checkpoint, writing new checkpoints
    beside it (its run folder), whatever the submit directory; a checkpoint that does not match its
    manifest fails as with ``--resume``.
  * ``--fault-dir D``: when ``D/xid79-<node>`` appears, print an NCCL watchdog timeout and hang
    (no more steps), as a rank does after a peer GPU fell off the bus.

Usage: sbatch [-w gpu01] --gres=gpu:4 <state>/bin/train.py --run-dir DIR [--steps N] [--ckpt-every K]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

_SIZES = {"model.pt": 256 * 1024, "optim.pt": 128 * 1024}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _log(text: str) -> None:
    print(f"[{_now()}] {text}", flush=True)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_checkpoint(ckpt_root: Path, step: int, job_id: str, node: str) -> Path:
    """Write step_<N>/{model.pt, optim.pt, manifest.json} atomically; return the folder."""
    final = ckpt_root / f"step_{step:06d}"
    tmp = ckpt_root / f".tmp_step_{step:06d}"
    tmp.mkdir(parents=True, exist_ok=True)
    files = []
    for name, size in _SIZES.items():
        (tmp / name).write_bytes(random.randbytes(size))
        files.append({"path": name, "size_bytes": size, "sha256": _sha256(tmp / name)})
    manifest = {"step": step, "job_id": job_id, "node": node, "created_at": _now(), "files": files}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, final)
    return final


def newest_checkpoint(ckpt_root: Path) -> Path | None:
    """The checkpoint folder with the highest step, or None."""
    found = sorted(p for p in ckpt_root.glob("step_*") if p.is_dir())
    return found[-1] if found else None


def _verify(ckpt: Path) -> str | None:
    """None when every file matches the manifest, else what is wrong."""
    manifest = json.loads((ckpt / "manifest.json").read_text())
    for f in manifest["files"]:
        p = ckpt / f["path"]
        if not p.exists():
            return f"{p} is missing"
        if p.stat().st_size != f["size_bytes"] or _sha256(p) != f["sha256"]:
            return f"{p} does not match its manifest"
    return None


def _resume(ckpt_root: Path, chosen: Path | None = None) -> int:
    ckpt = chosen or newest_checkpoint(ckpt_root)
    if ckpt is None:
        _log("no checkpoint found, starting from step 0")
        return 0
    _log(f"loading checkpoint {ckpt / 'model.pt'}")
    if _verify(ckpt) is not None:
        print("Traceback (most recent call last):", flush=True)
        print('  File "train.py", line 212, in <module>', flush=True)
        print("    state = torch.load(ckpt_path, map_location=\"cpu\")", flush=True)
        print("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
              flush=True)
        sys.exit(1)
    manifest = json.loads((ckpt / "manifest.json").read_text())
    _log(f"resumed from checkpoint {ckpt} step={manifest['step']}")
    return int(manifest["step"])


def _oom(rank: int) -> None:
    # Shape of PyTorch >= 2.1's torch.OutOfMemoryError message.
    print("Traceback (most recent call last):", flush=True)
    print('  File "train.py", line 148, in train_step', flush=True)
    print("    loss.backward()", flush=True)
    print(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {rank} has a total capacity "
        "of 79.15 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process has 77.95 GiB memory "
        "in use. Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.41 GiB is reserved by PyTorch "
        "but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        flush=True,
    )
    sys.exit(1)


def _nccl_hang(step: int) -> None:
    # Shape of PyTorch 2.4+'s watchdog line: [rankR]:[E<MMDD> <hh:mm:ss.nnnnnnnnn> <tid> ProcessGroupNCCL.cpp:<line>] ...
    seq = 4 * step + 1
    ns = time.time_ns()
    stamp = datetime.fromtimestamp(ns / 1e9).strftime("%m%d %H:%M:%S") + f".{ns % 1_000_000_000:09d}"
    print(
        f"[rank0]:[E{stamp} {os.getpid()} ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) "
        "ran for 600127 milliseconds before timing out.",
        flush=True,
    )
    while True:  # a hung collective: the process stays, no more steps are logged
        time.sleep(3600)


def main() -> None:
    p = argparse.ArgumentParser(description="training-like sandbox job")
    p.add_argument("--run-dir", type=Path, default=Path.cwd())
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--step-seconds", type=float, default=1.0)
    p.add_argument("--ckpt-every", type=int, default=10, help="0 = never checkpoint")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--oom-at-step", type=int, default=0)
    p.add_argument("--fault-dir", type=Path, default=None)
    args = p.parse_args()

    job_id = os.environ.get("SLURM_JOB_ID", "0")
    node = os.environ.get("SLURMD_NODENAME", "localhost")
    chosen = Path(os.environ["WARDEN_RESUME_FROM"]) if os.environ.get("WARDEN_RESUME_FROM") else None
    ckpt_root = chosen.parent if chosen else args.run_dir / "checkpoints"
    ckpt_root.mkdir(parents=True, exist_ok=True)
    _log(f"job={job_id} node={node} gpus_on_node={os.environ.get('SLURM_GPUS_ON_NODE', '0')} start")
    start = _resume(ckpt_root, chosen) if (args.resume or chosen) else 0
    rng = random.Random(int(job_id) if job_id.isdigit() else 0)
    loss = 2.5 * (0.999 ** start)
    for step in range(start + 1, args.steps + 1):
        if args.fault_dir is not None and (args.fault_dir / f"xid79-{node}").exists():
            _nccl_hang(step)
        if args.oom_at_step and step >= args.oom_at_step:
            _oom(0)
        time.sleep(args.step_seconds)
        loss = max(0.05, loss * 0.995 + rng.uniform(-0.01, 0.01))
        _log(f"step={step} loss={loss:.4f}")
        if args.ckpt_every and step % args.ckpt_every == 0:
            path = save_checkpoint(ckpt_root, step, job_id, node)
            _log(f"saved checkpoint step={step} path={path}")
    _log("training finished")


if __name__ == "__main__":
    main()
