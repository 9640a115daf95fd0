"""check_node_failure_history on sacct -p history (job rows and steps)."""

from __future__ import annotations

from tools.checks.node_failure_history import NodeHistoryConfig, check_node_failure_history

HEAD = "JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|\n"


def _row(job: str, user: str, state: str, start: str, end: str, elapsed: str, node: str) -> str:
    return f"{job}|j{job}|{user}|ml|gpu|{state}|1:0|{start}|{start}|{end}|{elapsed}|04:00:00|1|gres/gpu=8,node=1|{node}|\n"


# gpu-b07 kills every job within seconds (five jobs of three users in an hour); gpu-b08 runs fine.
BLACK_HOLE = HEAD + "".join(
    _row(str(700170 + i), u, "FAILED", f"2026-05-20T14:{10 + i:02d}:00", f"2026-05-20T14:{10 + i:02d}:09", "00:00:09",
         "gpu-b07") for i, u in enumerate(["kim", "jl", "kim", "ana", "jl"])
) + _row("700190", "kim", "COMPLETED", "2026-05-20T12:00:00", "2026-05-20T14:00:00", "02:00:00", "gpu-b08")
# hgx-14 is in the failures of three jobs of two users over four days, each hours into its run.
REPEAT = HEAD + "".join(_row(j, u, "NODE_FAIL", s, e, "05:00:00", n) for j, u, s, e, n in [
    ("610001", "li", "2026-05-16T01:00:00", "2026-05-16T06:00:00", "hgx-14"),
    ("610077", "ro", "2026-05-18T01:00:00", "2026-05-18T06:00:00", "hgx-14"),
    ("610150", "li", "2026-05-20T01:00:00", "2026-05-20T06:00:00", "hgx-14"),
    ("610151", "ro", "2026-05-20T01:00:00", "2026-05-20T06:00:00", "hgx-02"),
])


def test_black_hole_node_is_named_and_drained(make_facts):
    facts = make_facts(("slurm/sacct.txt", "sacct-text", BLACK_HOLE))
    (f,) = check_node_failure_history(facts.model_copy(update={"captured_at": facts.captured_at.replace(
        year=2026, month=5, day=20, hour=15)}), NodeHistoryConfig())
    assert f.culprits[0] == "node:gpu-b07" and "black hole" in f.message and "3 user(s)" in f.message
    assert [a.type for a in f.suggested_actions] == ["drain_node", "run_gpu_diagnostic"]


def test_repeat_offender_over_days(make_facts):
    (f,) = check_node_failure_history(make_facts(("slurm/sacct.txt", "sacct-text", REPEAT)), NodeHistoryConfig())
    assert f.culprits[:4] == ["node:hgx-14", "job:610001", "job:610077", "job:610150"]
    assert "repeat offender" in f.message and "over 4.0 days" in f.message


def test_failures_spread_over_many_nodes_name_none(make_facts):
    rows = HEAD + "".join(_row(str(800 + i), "kim", "FAILED", "2026-05-20T14:00:00", "2026-05-20T14:00:05",
                               "00:00:05", f"n{i:02d}") for i in range(8))
    assert check_node_failure_history(make_facts(("slurm/sacct.txt", "sacct-text", rows)), NodeHistoryConfig()) == []


def test_jobs_whose_own_logs_explain_their_failure_do_not_make_a_black_hole(make_facts):
    # three of the five quick failures ran out of GPU memory or could not load their checkpoint
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    ckpt = "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory\n"
    logs = {"700170": oom, "700172": ckpt, "700174": oom}
    facts = make_facts(("slurm/sacct.txt", "sacct-text", BLACK_HOLE),
                       *[(f"logs/{j}/out", "job-log", t) for j, t in logs.items()],
                       **{f"logs/{j}/out": {"job": j} for j in logs})
    at = facts.model_copy(update={"captured_at": facts.captured_at.replace(year=2026, month=5, day=20, hour=15)})
    assert check_node_failure_history(at, NodeHistoryConfig()) == []


def _multi(job: str, user: str, day: int, nodes: str, n: int) -> str:
    start, end = f"2026-05-{day:02d}T01:00:00", f"2026-05-{day:02d}T06:00:00"
    return (f"{job}|j{job}|{user}|ml|gpu|FAILED|1:0|{start}|{start}|{end}|05:00:00|04:00:00|{n}|gres/gpu=8,node={n}|"
            f"{nodes}|\n")


# rtx-09 is in all four multi-node failures; its neighbours share three of them only because the
# scheduler packs jobs onto adjacent nodes.
PACKED = HEAD + "".join(_multi(j, u, d, nl, n) for j, u, d, nl, n in [
    ("91001", "li", 14, "rtx-[08-09]", 2), ("91020", "ro", 15, "rtx-[09-10]", 2),
    ("91044", "ana", 16, "rtx-[08-10]", 3), ("91070", "li", 18, "rtx-[07-10]", 4),
])


def test_a_repeat_offender_explains_the_failures_its_neighbours_share(make_facts):
    found = check_node_failure_history(make_facts(("slurm/sacct.txt", "sacct-text", PACKED)), NodeHistoryConfig())
    assert [f.culprits[0] for f in found] == ["node:rtx-09"]


def test_nodes_that_always_fail_together_are_both_named(make_facts):
    # Two nodes in every failure cannot be told apart from history alone: neither explains the other.
    rows = HEAD + "".join(_multi(j, u, d, "rtx-[21-22]", 2) for j, u, d in
                          [("92001", "li", 14), ("92002", "ro", 16), ("92003", "ana", 18)])
    found = check_node_failure_history(make_facts(("slurm/sacct.txt", "sacct-text", rows)), NodeHistoryConfig())
    assert sorted(f.culprits[0] for f in found) == ["node:rtx-21", "node:rtx-22"]
