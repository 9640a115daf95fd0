"""check_mdt_metadata_storm on `lctl get_param mdt.*.md_stats` / `mdt.*.job_stats` text (Lustre 2.12 and 2.15)."""

from __future__ import annotations

from tools.knowledge.precedence import confidence

from pathlib import Path

from tools.checks.metadata_wall import MetadataConfig, check_mdt_metadata_storm

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures"
# Context: who runs jobs 74701 and 73440 (for the user culprit).
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             74701       cpu dedup-sc    heidi  R      52:10      4 cpu[01-04]
             73440       gpu llm7b-sf    frank  R    7:36:50      4 gpu[010-013]
"""

# Fires: 2.15 md_stats over a 300 s window after the collector's clear: about 283k ops/s on
# MDT0000 (metadata-wall incident), far over 20k ops/s.
MD_STATS_STORM = """mdt.lustre-MDT0000.md_stats=
snapshot_time             1795950300.429666397 secs.nsecs
start_time                1795950000.498419852 secs.nsecs
elapsed_time              299.931246519 secs.nsecs
open                      15952883 samples [usecs] 2 121379 7666757450 12117330820335
close                     15991217 samples [usecs] 3 43738 7272992412 26577080417187
mknod                     10983 samples [usecs] 2 118997 4053754 10181278259
unlink                    12676 samples [usecs] 2 87859 5669934 20702656032
getattr                   49413493 samples [usecs] 1 161522 23551798359 41354142768554
getxattr                  3601234 samples [usecs] 4 46240 1602784848 2567767398531
"""


def _job(job_id: str, open_: int, getattr_: int, elapsed: str | None = "299.133804560", us_per_op: int = 470) -> str:
    """One 2.15 job_stats entry; ``us_per_op`` sets the usecs sums (mean service time per op)."""
    timing = f"  start_time:      1795950000.424885102 secs.nsecs\n  elapsed_time:    {elapsed} secs.nsecs\n" if elapsed else ""
    return (f"- job_id:          {job_id}\n  snapshot_time:   1795950299.558689639 secs.nsecs\n{timing}"
            f"  open:            {{ samples: {open_:>11}, unit: usecs, min: 4, max: 54449, sum: {open_ * us_per_op}, sumsq: 1 }}\n"
            f"  close:           {{ samples: {open_:>11}, unit: usecs, min: 3, max: 33092, sum: {open_ * us_per_op}, sumsq: 1 }}\n"
            f"  getattr:         {{ samples: {getattr_:>11}, unit: usecs, min: 1, max: 71012, sum: {getattr_ * us_per_op}, sumsq: 1 }}\n")


# Job 74701 (a dedup scan opening and stat-ing every file) makes 96% of the MDT's operations.
JOB_STATS = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _job("74701", 15_300_000, 47_280_000) + _job("73440", 63_000, 400_000)
# Three jobs share the load evenly: the MDT is overloaded, but no single job is to blame.
JOB_STATS_SHARED = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + "".join(
    _job(j, 5_000_000, 16_000_000) for j in ("74701", "73440", "74702"))


def _facts(make_facts, *files: tuple[str, str], squeue: str = SQUEUE):
    return make_facts(("slurm/squeue.txt", "squeue-text", squeue),
                      *[(f"lustre/lustre/{i}.txt", fmt, text) for i, (fmt, text) in enumerate(files)])


def test_storm_names_the_dominant_job_its_user_and_the_fs(make_facts):
    (f,) = check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", MD_STATS_STORM), ("lctl-job-stats", JOB_STATS)),
                                    MetadataConfig())
    assert f.root_cause == "metadata_wall"
    assert f.culprits == ["job:74701", "mdt:lustre-MDT0000", "fs:lustre", "user:heidi"]
    assert (f.evidence[0].metric, f.evidence[0].unit) == ("md_stats", "ops/s") and 283_000 < f.evidence[0].value < 284_000
    assert f.evidence[1].metric == "job_stats" and f.evidence[1].value > 95
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "74701")]
    assert f.message == "lustre-MDT0000 serves 283,340 ops/s at 472 us mean service time (threshold 20,000 ops/s, 200 us)"


def test_overloaded_mdt_without_a_dominant_job_names_only_the_fs(make_facts):
    (f,) = check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", MD_STATS_STORM),
                                           ("lctl-job-stats", JOB_STATS_SHARED)), MetadataConfig())
    assert f.culprits == ["mdt:lustre-MDT0000", "fs:lustre"] and f.suggested_actions == [] and f.confidence == confidence("direct")


def test_high_rate_served_fast_is_not_a_wall(make_facts):
    # 47k ops/s spread over jobs, each op served in ~25 us: the MDT keeps up (healthy-high-but-
    # normal-mdt-load incident). Without service times the rate alone would have fired.
    fast = MD_STATS_STORM
    for op, n in (("open", 15952883), ("close", 15991217), ("getattr", 49413493), ("getxattr", 3601234),
                  ("mknod", 10983), ("unlink", 12676)):
        line = next(ln for ln in fast.splitlines() if ln.startswith(op + " "))
        cols = line.split()
        cols[6] = str(n * 25)
        fast = fast.replace(line, " ".join(cols))
    assert check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", fast), ("lctl-job-stats", JOB_STATS_SHARED)),
                                    MetadataConfig()) == []
    # A site that calls 20 us slow gets the finding.
    assert len(check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", fast)), MetadataConfig(slow_service_us=20))) == 1


def test_busy_but_healthy_mdts_do_not_fire(make_facts):
    # The 2.15 fixture: 140M operations over a day (86,400 s) is about 1,600 ops/s.
    text = (FIXTURES / "lctl-md-stats" / "2.15-mds-two-mdts.txt").read_text()
    assert check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", text)), MetadataConfig()) == []


def test_since_mount_counters_without_elapsed_time_do_not_fire(make_facts):
    # Lustre 2.12 prints no start/elapsed time: these billions are since the MDT was mounted, not
    # a storm now. (Before the fix any 2.12 MDS crossed min_ops_without_time.)
    text = (FIXTURES / "lctl-md-stats" / "2.12-mds-reqs.txt").read_text()
    assert check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", text)), MetadataConfig()) == []


def test_untimed_job_stats_are_timed_from_the_slurm_job_start(make_facts):
    # 2.12 job_stats carry no elapsed_time; scontrol says job 74701 started 300 s before the
    # snapshot, so its 77.9M operations are 259,600 ops/s.
    scontrol = """JobId=74701 JobName=dedup-scan
   UserId=heidi(20410) GroupId=heidi(20410) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   StartTime=2026-11-28T21:00:00 EndTime=2026-11-29T21:00:00 Deadline=N/A
   NodeList=cpu[01-04]
"""
    # StartTime 2026-11-28T21:00:00 (UTC) is epoch 1795899600; the snapshot is taken 300 s later.
    js = ("mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _job("74701", 15_300_000, 47_280_000, elapsed=None)) \
        .replace("1795950299.558689639", f"{1795899600 + 300:.9f}")
    facts = make_facts(("slurm/scontrol_show_job_74701.txt", "scontrol-job-text", scontrol),
                       ("lustre/lustre/job_stats.txt", "lctl-job-stats", js))
    (f,) = check_mdt_metadata_storm(facts, MetadataConfig())
    assert f.culprits == ["job:74701", "mdt:lustre-MDT0000", "fs:lustre", "user:heidi"]
    assert "serves 259,600 ops/s" in f.message


def test_threshold_is_configurable(make_facts):
    facts = _facts(make_facts, ("lctl-md-stats", MD_STATS_STORM), ("lctl-job-stats", JOB_STATS))
    assert check_mdt_metadata_storm(facts, MetadataConfig(max_ops_per_s=300_000)) == []
    (f,) = check_mdt_metadata_storm(facts, MetadataConfig(min_job_share=0.995))
    assert f.culprits == ["mdt:lustre-MDT0000", "fs:lustre"]


def test_process_named_entry_is_quoted_not_made_a_job(make_facts):
    # jobid_name=%e.%u: a shell loop run outside Slurm appears as "$(reboot).0"-like procname.uid
    # text; it is evidence, never a job to notify and never a command.
    js = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _job("find.1000", 15_300_000, 47_280_000)
    (f,) = check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", MD_STATS_STORM), ("lctl-job-stats", js)),
                                    MetadataConfig())
    assert f.culprits == ["mdt:lustre-MDT0000", "fs:lustre"] and f.suggested_actions == []
    assert "find.1000" in f.evidence[1].text


def test_slow_opens_diluted_by_cheap_closes_are_still_a_wall(make_facts):
    # A venv import storm: every rank opens and stats thousands of .py files; closes cost 2 us and pull the
    # overall mean under the limit, while the opens themselves wait ~600 us each.
    entry = ("- job_id:          74701\n  snapshot_time:   1795950299.558689639 secs.nsecs\n"
             "  start_time:      1795950000.424885102 secs.nsecs\n  elapsed_time:    299.133804560 secs.nsecs\n"
             "  open:            { samples:     9000000, unit: usecs, min: 4, max: 54449, sum: 5400000000, sumsq: 1 }\n"
             "  close:           { samples:     9000000, unit: usecs, min: 1, max: 90, sum: 18000000, sumsq: 1 }\n"
             "  getattr:         { samples:    60000000, unit: usecs, min: 1, max: 7101, sum: 3000000000, sumsq: 1 }\n")
    stats = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + entry
    (f,) = check_mdt_metadata_storm(_facts(make_facts, ("lctl-job-stats", stats)), MetadataConfig())
    assert f.root_cause == "metadata_wall" and "open at 600 us" in f.message and "job:74701" in f.culprits
    # the same storm with its opens served at 20 us is load the MDT keeps up with
    fast = stats.replace("sum: 5400000000", "sum: 180000000")
    assert check_mdt_metadata_storm(_facts(make_facts, ("lctl-job-stats", fast)), MetadataConfig()) == []


def _md_sample(snapshot: str, mknod: int, getattr_: int) -> str:
    """One 2.15 md_stats read of MDT0000 (``lctl get_param`` twice, 30 s apart); creates at ~30 us each."""
    return ("mdt.lustre-MDT0000.md_stats=\n"
            f"snapshot_time             {snapshot} secs.nsecs\nstart_time                1795000000.000000000 secs.nsecs\n"
            f"elapsed_time              {float(snapshot) - 1795000000:.9f} secs.nsecs\n"
            f"mknod                     {mknod} samples [usecs] 3 9120 {mknod * 30} 1\n"
            f"getattr                   {getattr_} samples [usecs] 1 90211 {getattr_ * 20} 1\n")


def _entry(job_id: str, op: str, samples: int, us: int) -> str:
    return (f"- job_id:          {job_id}\n  snapshot_time:   1795950299.558689639 secs.nsecs\n"
            "  start_time:      1795946699.424885102 secs.nsecs\n  elapsed_time:    3600.133804560 secs.nsecs\n"
            f"  {op + ':':<16} { {'samples': samples} }\n".replace("{'samples': " + str(samples) + "}",
                                                                     f"{{ samples: {samples}, unit: usecs, min: 1, max: 90211, sum: {us}, sumsq: 1 }}"))


def test_a_create_storm_served_fast_is_a_wall_when_another_jobs_stats_queue_behind_it(make_facts):
    # An untar of millions of small files: 1.8M mknods in 30 s at ~30 us each keeps the MDT-wide mean low,
    # while the training job's getattrs wait 5 ms each behind it (not the shape of the unlink-storm report).
    window = _md_sample("1795950270.000000000", 900_000_000, 40_000_000) + _md_sample(
        "1795950300.000000000", 901_800_000, 40_030_000)
    stats = ("mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _entry("74701", "mknod", 5_400_000, 162_000_000)
             + _entry("73440", "getattr", 90_000, 450_000_000))
    (f,) = check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", window), ("lctl-job-stats", stats)),
                                    MetadataConfig())
    assert f.culprits[:2] == ["job:74701", "mdt:lustre-MDT0000"]
    assert "job 73440's getattr at 5,000 us" in f.message and [a.job for a in f.suggested_actions] == ["74701"]


def test_a_fast_storm_is_not_a_wall_on_a_few_slow_ops_or_slow_unlinks(make_facts):
    window = _md_sample("1795950270.000000000", 900_000_000, 40_000_000) + _md_sample(
        "1795950300.000000000", 901_800_000, 40_030_000)
    few = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _entry("74701", "mknod", 5_400_000, 162_000_000) + _entry(
        "73440", "getattr", 500, 2_500_000)  # 500 getattrs, slow ones among them: too few to judge the MDT
    unlinks = "mdt.lustre-MDT0000.job_stats=\njob_stats:\n" + _entry("74701", "mknod", 5_400_000, 162_000_000) + _entry(
        "73440", "unlink", 90_000, 450_000_000)  # unlinks of wide-striped files are slow by nature
    for stats in (few, unlinks):
        assert check_mdt_metadata_storm(_facts(make_facts, ("lctl-md-stats", window), ("lctl-job-stats", stats)),
                                        MetadataConfig()) == []
