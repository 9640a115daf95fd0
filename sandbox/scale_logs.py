"""Kernel logs, job logs and Lustre statistics of a synthetic cluster, in their real shapes.

* ``dmesg -T`` per node: the ordinary boot lines every GPU node prints (kernel, DMI, mlx5 cables
  plugged, NVIDIA driver, IB link ready, LNet and the Lustre mount), a few benign later lines
  (perf sample-rate lowering, journald rotation hints), then whatever a fault added;
* job logs of multi-node training jobs: torchrun's banner, NCCL init lines, step/loss lines and
  checkpoint saves every 2,000 steps, as PyTorch 2.4 and NCCL 2.21 print them;
* Lustre 2.15 ``lctl get_param mdt.*.md_stats`` / ``mdt.*.job_stats`` (jobid_var=SLURM_JOB_ID) and
  ``lfs df`` / ``lfs df -i`` for the ``scratch`` file system.

Shapes follow the recorded incidents under evals/incidents/ (which cite their public sources).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from sandbox.scale_model import Cluster, Job, Node

__all__ = ["dmesg_time", "kernel_log", "training_log", "md_stats", "job_stats", "lfs_df", "lfs_df_inodes", "FS",
           "METADATA_OPS"]

FS = "scratch"
METADATA_OPS = ("open", "close", "mknod", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr", "getxattr",
                "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename")


def dmesg_time(t: datetime) -> str:
    """``[Sun Nov 29 09:21:37 2026]`` as ``dmesg -T`` prints it."""
    return t.strftime("[%a %b %e %H:%M:%S %Y]")


def kernel_log(node: Node, rng: random.Random) -> str:
    """One node's ``dmesg -T`` excerpt."""
    b = node.boot_time
    ip = f"10.40.{node.index // 250}.{node.index % 250 + 1}"
    boot = [
        (0, "Linux version 5.15.0-122-generic (buildd@lcy02-amd64-071) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
            "GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024"),
        (0, "Command line: BOOT_IMAGE=/boot/vmlinuz-5.15.0-122-generic root=UUID=7d1c4be2-90a1-4c5e-8c1f-2b6f3e0a9d41 "
            "ro console=tty0 console=ttyS0,115200n8 intel_iommu=on iommu=pt pci=realloc=off"),
        (0, "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/10/2024"),
        (14, "mlx5_core 0000:1a:00.0: firmware version: 28.41.1000"),
        *[(16, f"mlx5_core 0000:{bus}:00.0: Port module event: module {m}, Cable plugged")
          for m, bus in enumerate(("1a", "3c", "4d", "5e"))],
        (23, "nvidia: loading out-of-tree module taints kernel."),
        (24, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024"),
        (25, "nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, "
             "inheriting taint."),
        (31, "IPv6: ADDRCONF(NETDEV_CHANGE): ibp26s0: link becomes ready"),
        (38, "LNet: HW NUMA nodes: 2, HW CPU cores: 224, npartitions: 2"),
        (39, f"LNet: Added LNI {ip}@o2ib [8/256/0/180]"),
        (41, "Lustre: Mounted scratch-client"),
    ]
    lines = [f"{dmesg_time(b + timedelta(seconds=s))} {msg}" for s, msg in boot]
    later = sorted(rng.sample(range(3600, 20 * 86400), 2))
    lines.append(f"{dmesg_time(b + timedelta(seconds=later[0]))} perf: interrupt took too long (3029 > 2995), "
                 "lowering kernel.perf_event_max_sample_rate to 80000")
    lines.append(f"{dmesg_time(b + timedelta(seconds=later[1]))} hrtimer: interrupt took {rng.randint(9000, 40000)} ns")
    lines += [f"{dmesg_time(when)} {msg}" for when, msg in sorted(node.kernel_extra)]
    return "\n".join(lines) + "\n"


def training_log(cl: Cluster, job: Job, rng: random.Random, *, until: datetime | None = None) -> list[str]:
    """A healthy multi-node torchrun job's log from its start to ``until`` (default: capture time)."""
    first = cl.nodes[job.nodes[0]].name
    ranks = 8 * job.num_nodes
    start = job.start or cl.captured_at
    end = until or cl.captured_at
    out = [f"+ srun --kill-on-bad-exit=1 torchrun --nnodes={job.num_nodes} --nproc-per-node=8 --rdzv-backend=c10d "
           f"--rdzv-endpoint={first}:29500 train.py --config configs/{job.name}.yaml",
           f"{(start + timedelta(seconds=21)).strftime('%Y-%m-%d %H:%M:%S')},000 | INFO | train | torch 2.4.1+cu124 | "
           f"world_size {ranks} | nodes {job.num_nodes} | job {job.job_id}",
           f"{first}:1932344:1932344 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
           f"{first}:1932344:1932754 [0] NCCL INFO Using network IB",
           f"{first}:1932344:1932754 [0] NCCL INFO ncclCommInitRank comm 0x5581c2a3f0c0 rank 0 nranks {ranks} "
           "cudaDev 0 nvmlDev 0 busId 18000 commId 0x1e2feb89414c343c - Init COMPLETE"]
    t, step = start + timedelta(seconds=60), 0
    loss = 4.2
    ckpt = f"/lustre/scratch/{job.user}/{job.name}/ckpt"
    while t < end:
        step += 200
        loss = max(1.2, loss - rng.uniform(0.0, 0.004))
        out.append(f"{t.strftime('%Y-%m-%d %H:%M:%S')},{rng.randint(0, 999):03d} | INFO | train | step {step}/250000 | "
                   f"loss {loss:.4f} | lr 3.00e-04 | grad_norm {rng.uniform(0.28, 0.55):.3f} | 1.19 s/it")
        if step % 2000 == 0:
            out.append(f"{(t + timedelta(seconds=41)).strftime('%Y-%m-%d %H:%M:%S')},620 | INFO | ckpt | saved checkpoint "
                       f"to {ckpt}/step_{step:06d} (38.2 GiB, 39.7 s)")
        t += timedelta(seconds=240)
    return out


def _usecs(count: int, mean_us: float) -> str:
    total = int(count * mean_us)
    return f"{count} samples [usecs] 1 {int(mean_us * 40) + 5} {total} {int(total * mean_us * 3)}"


def md_stats(cl: Cluster, rng: random.Random) -> str:
    """``lctl get_param mdt.*.md_stats`` over a 300 s window (the site clears them every five minutes)."""
    snap = cl.captured_at.timestamp()
    out: list[str] = []
    storm = cl.lustre_storm
    for mdt in range(2):
        rate = 6000 + len(cl.nodes) * 2 + rng.randint(0, 900)
        mean = 28.0
        if storm and mdt == 0:
            rate, mean = rate + storm[1], 480.0
        out += [f"mdt.{FS}-MDT{mdt:04d}.md_stats=", f"snapshot_time             {snap:.9f} secs.nsecs",
                f"start_time                {snap - 300:.9f} secs.nsecs", "elapsed_time              300.000000000 secs.nsecs"]
        shares = {"open": 0.24, "close": 0.24, "getattr": 0.38, "getxattr": 0.06, "setattr": 0.02, "statfs": 0.01,
                  "mknod": 0.01, "unlink": 0.01, "mkdir": 0.003, "rmdir": 0.002, "rename": 0.003, "setxattr": 0.001,
                  "sync": 0.001, "samedir_rename": 0.002, "crossdir_rename": 0.001}
        for op in METADATA_OPS:
            n = max(1, int(rate * 300 * shares[op]))
            out.append(f"{op:<26}{_usecs(n, mean)}")
    return "\n".join(out) + "\n"


def job_stats(cl: Cluster, rng: random.Random) -> str:
    """``lctl get_param mdt.scratch-MDT0000.job_stats``: running jobs (and a storming one) since the last clear."""
    snap = cl.captured_at.timestamp()
    out = [f"mdt.{FS}-MDT0000.job_stats=", "job_stats:"]
    storm = cl.lustre_storm
    for j in cl.jobs:
        if j.state != "RUNNING":
            continue
        rate = storm[1] * 0.9 if storm and j.job_id == storm[0] else rng.uniform(0.5, 12.0) * j.num_nodes
        mean = 480.0 if storm and j.job_id == storm[0] else 25.0
        out += [f"- job_id:          {j.job_id}", f"  snapshot_time:   {snap - rng.uniform(0, 6):.9f} secs.nsecs",
                f"  start_time:      {snap - 300:.9f} secs.nsecs", "  elapsed_time:    300.000000000 secs.nsecs"]
        for op in ("open", "close", "getattr", "statfs"):
            n = int(rate * 300 * {"open": 0.3, "close": 0.3, "getattr": 0.38, "statfs": 0.02}[op])
            out.append(f"  {op + ':':<17}{{ samples: {n:>11}, unit: usecs, min: {1:>8}, max: {int(mean * 40):>8}, "
                       f"sum: {int(n * mean):>15}, sumsq: {int(n * mean * mean * 3):>16} }}")
    return "\n".join(out) + "\n"


def _df(kind: str, size: int, used: float) -> tuple[int, int, int, int]:
    u = int(size * used)
    return size, u, size - u, int(used * 100 + 0.5)


def lfs_df(cl: Cluster, *, inodes: bool = False) -> str:
    """``lfs df /lustre/scratch`` (or ``-i``): two MDTs and one OST per 250 nodes (at least 8)."""
    head = "UUID                      Inodes       IUsed       IFree IUse% Mounted on" if inodes else \
        "UUID                   1K-blocks        Used   Available Use% Mounted on"
    rows = [head]
    for m in range(2):
        size, u, free, pct = _df("mdt", 2_000_000_000 if inodes else 5_846_221_824, 0.31 + 0.02 * m)
        rows.append(f"{FS}-MDT{m:04d}_UUID {size:>14} {u:>11} {free:>11} {pct:>3}% /lustre/scratch[MDT:{m}]")
    for o in range(max(8, len(cl.nodes) // 250)):
        size, u, free, pct = _df("ost", 500_000_000 if inodes else 122_951_434_240, 0.55 + (o % 9) * 0.02)
        rows.append(f"{FS}-OST{o:04x}_UUID {size:>14} {u:>11} {free:>11} {pct:>3}% /lustre/scratch[OST:{o}]")
    return "\n".join(rows) + "\n"


def lfs_df_inodes(cl: Cluster) -> str:
    """``lfs df -i /lustre/scratch``."""
    return lfs_df(cl, inodes=True)
