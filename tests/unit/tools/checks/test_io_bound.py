"""check_io_bandwidth_bound on captured obdfilter job_stats (Lustre 2.15, with elapsed_time) and DCGM text."""

from __future__ import annotations

from tools.checks.io_bound import IoBoundConfig, check_io_bandwidth_bound

# Context: the training job 1184220 on gpu-a-[009-011] and farah's CPU job 1184391.
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
           1184220       gpu vidgen-p      ana  R    5:10:02      3 gpu-a-[009-011]
           1184391       cpu shard-re    farah  R      10:40      1 cpu-c-01
"""


def _ost(fs: str, idx: int, entries: list[tuple[str, int, int]]) -> str:
    """obdfilter job_stats of one OST as `lctl get_param obdfilter.*.job_stats` prints it on 2.15
    (start_time / elapsed_time present). entries: (job_id, read bytes, write bytes) over 600 s."""
    out = [f"obdfilter.{fs}-OST{idx:04x}.job_stats=", "job_stats:"]
    for job, rd, wr in entries:
        out += [f"- job_id:          {job}",
                "  snapshot_time:   1795959579.402601004 secs.nsecs",
                "  start_time:      1795958979.402601004 secs.nsecs",
                "  elapsed_time:    600.000000000 secs.nsecs",
                f"  read_bytes:      {{ samples:        3533, unit: bytes, min:     4096, max:  4194304, sum: {rd:>16}, sumsq: 0 }}",
                f"  write_bytes:     {{ samples:       63819, unit: bytes, min:     4096, max: 16777216, sum: {wr:>16}, sumsq: 0 }}",
                "  punch:           { samples:          11, unit: usecs, min:        4, max:     3705, sum:             880, sumsq:           174383 }"]
    return "\n".join(out) + "\n"


def _prom(node: str, util: float, gpus: int = 2) -> str:
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
              f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node}"}} {util:g}' for g in range(gpus)]
    return "\n".join(lines) + "\n"


TB = 2_000_000_000_000
# Fires: job 1184391 writes 2 TB to each of two OSTs in 600 s (about 6.2 GiB/s, 99% of all OST
# traffic) while the training job on gpu-a-[009-011] reads little and its GPUs sit at 12%.
HEAVY = [_ost("scratch", 0, [("1184391", 0, TB), ("1184220", 14_404_624_579, 0)]),
         _ost("scratch", 1, [("1184391", 0, TB), ("1184220", 12_000_000_000, 0)])]
STARVED = {n: _prom(n, 12) for n in ("gpu-a-009", "gpu-a-010", "gpu-a-011")}
BUSY = {n: _prom(n, 96) for n in ("gpu-a-009", "gpu-a-010", "gpu-a-011")}


def _facts(make_facts, osts: list[str], proms: dict[str, str], squeue: str = SQUEUE):
    files = [("slurm/squeue.txt", "squeue-text", squeue)]
    files += [(f"lustre/scratch/job_stats_oss{i:02d}.txt", "lctl-job-stats", t) for i, t in enumerate(osts, 1)]
    files += [(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in proms.items()]
    return make_facts(*files, **{f"gpu/{n}.prom": {"node": n} for n in proms})


def test_one_job_saturating_the_osts_while_gpus_wait_fires(make_facts):
    (f,) = check_io_bandwidth_bound(_facts(make_facts, HEAVY, STARVED), IoBoundConfig())
    assert f.root_cause == "io_bandwidth_bound"
    assert f.culprits == ["job:1184391", "fs:scratch", "user:farah"]
    assert f.evidence[0].metric == "obdfilter job_stats" and f.evidence[0].unit == "GiB/s"
    assert 6.1 < f.evidence[0].value < 6.3
    assert "gpu-a-009, gpu-a-010, gpu-a-011" in f.evidence[1].text
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "1184391")]
    assert "6.2 GiB/s (threshold 5.0 GiB/s)" in f.message and "3 node(s)" in f.message


def test_heavy_io_while_gpus_stay_busy_does_not_fire(make_facts):
    # The OSTs are busy but nobody is waiting on them: a big copy on a quiet cluster is no incident.
    assert check_io_bandwidth_bound(_facts(make_facts, HEAVY, BUSY), IoBoundConfig()) == []


def test_traffic_shared_by_many_jobs_does_not_name_one(make_facts):
    # Four jobs each move about 1.5 GiB/s: a busy file system, not one job saturating it.
    shared = [_ost("scratch", i, [(str(1184400 + i), 0, TB // 2)]) for i in range(4)]
    assert check_io_bandwidth_bound(_facts(make_facts, shared, STARVED), IoBoundConfig()) == []


def test_thresholds_are_configurable(make_facts):
    facts = _facts(make_facts, HEAVY, STARVED)
    assert check_io_bandwidth_bound(facts, IoBoundConfig(heavy_gib_per_s=8.0)) == []
    assert check_io_bandwidth_bound(facts, IoBoundConfig(starved_util_pct=10.0)) == []
    assert len(check_io_bandwidth_bound(_facts(make_facts, HEAVY, BUSY), IoBoundConfig(starved_util_pct=97.0))) == 1


def test_hostile_job_name_is_plain_data(make_facts):
    squeue = SQUEUE.replace("shard-re", "$(rm -rf") + """           1184392       cpu ignore.p  mallory  R       1:00      1 cpu-c-02
"""
    (f,) = check_io_bandwidth_bound(_facts(make_facts, HEAVY, STARVED, squeue), IoBoundConfig())
    assert f.culprits == ["job:1184391", "fs:scratch", "user:farah"]
    assert f.suggested_actions[0].reason == "job saturates Lustre OST bandwidth"


ONE_OST = """obdfilter.proj-OST0006.job_stats=
job_stats:
- job_id:          120877
  snapshot_time:   1793884500.000000000 secs.nsecs
  start_time:      1793872980.000000000 secs.nsecs
  elapsed_time:    11520.000000000 secs.nsecs
  read_bytes:      { samples:     7370113, unit: bytes, min:     4096, max:   4194304, sum:  27416820360000, sumsq: 0 }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:         0, sum:               0, sumsq: 0 }
  read:            { samples:     7370113, unit: usecs, min:      118, max:    912004, sum:    303648655600, sumsq: 0 }
  write:           { samples:           0, unit: usecs, min:        0, max:         0, sum:               0, sumsq: 0 }
"""
LFS = "UUID                   1K-blocks        Used   Available Use% Mounted on\n" + "".join(
    f"proj-OST{i:04x}_UUID  100000000000 40000000000 60000000000  40% /proj[OST:{i}]\n" for i in range(8))


def test_a_job_whose_io_all_goes_through_one_slow_ost_is_io_bound(make_facts):
    # Fires: 2.2 GiB/s is below the heavy-job threshold, but it all goes through OST0006 of 8, at 41 ms a read.
    facts = make_facts(("lustre/proj/job_stats.txt", "lctl-job-stats", ONE_OST), ("lustre/proj/lfs_df.txt", "lfs-df", LFS))
    (f,) = check_io_bandwidth_bound(facts, IoBoundConfig())
    assert f.culprits == ["job:120877"] and "proj-OST0006" in f.message and "41 ms" in f.message
    assert "lfs setstripe" in (f.suggested_actions[0].reason or "")


def test_one_ost_of_a_small_file_system_is_not_a_striping_problem(make_facts):
    small = "".join(LFS.splitlines(True)[:3])  # two OSTs only
    facts = make_facts(("lustre/proj/job_stats.txt", "lctl-job-stats", ONE_OST), ("lustre/proj/lfs_df.txt", "lfs-df", small))
    assert check_io_bandwidth_bound(facts, IoBoundConfig()) == []


def test_a_degraded_ost_names_itself_and_the_running_jobs_reading_from_it(make_facts):
    lfs = """UUID                       bytes        Used   Available Use% Mounted on
scratch-OST0004_UUID      116.4T       71.1T       39.4T  65% /scratch[OST:4]
scratch-OST0005_UUID      116.4T       72.2T       38.3T  66% /scratch[OST:5] D
"""
    stats = """obdfilter.scratch-OST0005.job_stats=
job_stats:
- job_id:          77120
  snapshot_time:   1795515600
  read_bytes:      { samples: 120, unit: bytes, min: 4096, max: 1048576, sum: 125829120 }
- job_id:          77190
  snapshot_time:   1795515600
  read_bytes:      { samples: 10, unit: bytes, min: 4096, max: 1048576, sum: 10485760 }
"""
    squeue = """JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)
77120 gpu vit alice R 3:00:00 2 ga[05-06]
77190 gpu old bob CD 1:00:00 1 ga07
"""
    facts = make_facts(("lustre/lfs_df.txt", "lfs-df", lfs), ("lustre/ost_job_stats.txt", "lctl-job-stats", stats),
                       ("slurm/squeue.txt", "squeue-text", squeue))
    (f,) = [f for f in check_io_bandwidth_bound(facts, IoBoundConfig()) if "degraded" in f.message]
    assert f.culprits == ["ost:scratch-OST0005", "job:77120"] and f.suggested_actions == []
