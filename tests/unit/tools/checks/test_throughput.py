"""check_throughput_held on Megatron-LM iteration lines, tqdm bars and HF Trainer log dicts, two runs of one job."""

from __future__ import annotations

from tools.checks.throughput import ThroughputConfig, check_throughput_held

HEADER = "JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|\n"
# 7100 timed out yesterday; 7188 is the same user's same-named resubmission, running since 06:00.
SACCT = HEADER + """7100|gpt-13b|ana|llm|gpu|TIMEOUT|0:0|2026-03-03T05:50:00|2026-03-03T06:00:00|2026-03-04T06:00:00|1-00:00:00|1-00:00:00|8|gres/gpu=64,node=8|g[01-08]|
7188|gpt-13b|ana|llm|gpu|RUNNING|0:0|2026-03-04T05:55:00|2026-03-04T06:00:00|Unknown|04:15:00|1-00:00:00|8|gres/gpu=64,node=8|g[01-08]|
"""


def _megatron(ms: float, batch: int, tokens: str) -> str:
    return (f" [2026-03-04 10:10:00] iteration     1200/  50000 | consumed samples: 1228800 | elapsed time per iteration (ms): {ms} |"
            f" learning rate: 2.9E-04 | global batch size: {batch:5d} | lm loss: 2.104E+00 | tokens per second: {tokens} |\n")


def _facts(make_facts, old: str, new: str, sacct: str = SACCT):
    return make_facts(("slurm/sacct.txt", "sacct-text", sacct), ("logs/7100/out", "job-log", old),
                      ("logs/7188/out", "job-log", new), **{"logs/7100/out": {"job": "7100"}, "logs/7188/out": {"job": "7188"}})


def test_longer_megatron_iterations_at_the_same_tokens_per_second_are_healthy(make_facts):
    facts = _facts(make_facts, _megatron(2551.0, 1024, "822,110"), _megatron(5103.2, 2048, "821,934"))
    (f,) = check_throughput_held(facts, ThroughputConfig())
    assert f.root_cause == "healthy" and f.culprits == ["job:7188"]
    assert "821,934.0 tokens/s, as its previous run 7100 did" in f.message
    assert "5.1032 s instead of 2.551 s" in f.message and "global batch of 2,048 instead of 1,024" in f.message


def test_a_real_drop_in_rate_or_an_unchanged_step_is_not_called_healthy(make_facts):
    # the same longer iterations with tokens/s halved: a real slowdown, for the other checks to explain
    assert check_throughput_held(_facts(make_facts, _megatron(2551.0, 1024, "822,110"),
                                        _megatron(5103.2, 1024, "411,020")), ThroughputConfig()) == []
    # same rate, same step time, same batch: nothing changed and nothing to say
    assert check_throughput_held(_facts(make_facts, _megatron(2551.0, 1024, "822,110"),
                                        _megatron(2560.0, 1024, "820,001")), ThroughputConfig()) == []


def test_tqdm_bars_with_samples_per_second_and_the_older_run_is_never_the_one_explained(make_facts):
    old = "Epoch 3:  40%|####      | 400/1000 [17:00<25:30, 1.20s/it, loss=1.02, 212.7 samples/s]\n"
    new = "Epoch 3:  41%|####      | 410/1000 [34:00<50:10, 2.41s/it, loss=1.01, 213.1 samples/s]\n"
    (f,) = check_throughput_held(_facts(make_facts, old, new), ThroughputConfig())
    assert f.culprits == ["job:7188"] and "2.41 s instead of 1.2 s" in f.message
    # without start times the lower job id is the earlier submission
    unstarted = SACCT.replace("2026-03-03T06:00:00", "Unknown").replace("|2026-03-04T06:00:00|Unknown|", "|Unknown|Unknown|")
    (f,) = check_throughput_held(_facts(make_facts, old, new, sacct=unstarted), ThroughputConfig())
    assert f.culprits == ["job:7188"]
    # without accounting nothing says the two logs are one run: no claim
    assert check_throughput_held(make_facts(("logs/7100/out", "job-log", old), ("logs/7188/out", "job-log", new),
                                            **{"logs/7100/out": {"job": "7100"}, "logs/7188/out": {"job": "7188"}}),
                                 ThroughputConfig()) == []


def test_another_users_job_of_the_same_name_is_not_a_previous_run(make_facts):
    other = SACCT.replace("7100|gpt-13b|ana|", "7100|gpt-13b|bo|")
    assert check_throughput_held(_facts(make_facts, _megatron(2551.0, 1024, "822,110"),
                                        _megatron(5103.2, 2048, "821,934"), sacct=other), ThroughputConfig()) == []
