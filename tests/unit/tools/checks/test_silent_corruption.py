"""check_nan_on_one_node on job logs with rank prefixes (PyTorch >= 2.2 "[rankN]:") and sacct allocations."""

from __future__ import annotations

from tools.checks.silent_corruption import NanConfig, check_nan_on_one_node

# Job 1185012: 2 nodes x 8 GPUs, one rank per GPU, block distribution (ranks 0-7 on gpu-a-021,
# 8-15 on gpu-a-022).
SACCT = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
1185012|gpt-30b-pt|hiro|pretrain|gpu|RUNNING|0:0|2026-03-03T21:40:54|2026-03-03T21:58:49|Unknown|12:16:11|2-00:00:00|2|billing=224,cpu=224,gres/gpu=16,mem=2000G,node=2|gpu-a-[021-022]|
"""
LOG = "logs/1185012/gpt-30b-pt-1185012.out"

# Fires: only ranks 9 and 13 (both on gpu-a-022) print a NaN loss; the other ranks train on.
ONE_NODE = """[rank0]: 2026-03-04 09:10:02 | step 41900 | loss 2.2871 | grad_norm 0.288
[rank9]: 2026-03-04 09:10:02 | step 41900 | loss nan | grad_norm nan
[rank13]: 2026-03-04 09:12:40 | step 41925 | loss nan | grad_norm nan
[rank0]: 2026-03-04 09:15:02 | step 41950 | loss 2.2840 | grad_norm 0.301
"""
# Fires: Megatron's --check-for-nan-in-loss-and-grad assertion names the node itself.
MEGATRON = """[rank11]: Traceback (most recent call last):
[rank11]:   File "/opt/megatron/megatron/core/distributed/param_and_grad_buffer.py", line 201, in start_grad_sync
[rank11]:     assert not norm.isnan(), (
[rank11]: AssertionError: Rank 11: found NaN in local grad norm in backward pass before data-parallel communication collective. Device: 3, node: gpu-a-022
[rank13]: Traceback (most recent call last):
[rank13]:   File "/opt/megatron/megatron/core/distributed/param_and_grad_buffer.py", line 201, in start_grad_sync
[rank13]:     assert not norm.isnan(), (
[rank13]: AssertionError: Rank 13: found NaN in local grad norm in backward pass before data-parallel communication collective. Device: 5, node: gpu-a-022
"""
# Does not fire: NaN on ranks of both nodes -- the model diverged (learning rate), not one GPU.
ALL_NODES = """[rank2]: 2026-03-04 09:10:02 | step 41900 | loss nan | grad_norm nan
[rank9]: 2026-03-04 09:10:02 | step 41900 | loss nan | grad_norm nan
"""


def _facts(make_facts, log: str, sacct: str = SACCT):
    return make_facts(("slurm/sacct.txt", "sacct-text", sacct), (LOG, "job-log", log), **{LOG: {"job": "1185012"}})


def test_nan_only_from_one_nodes_ranks_blames_that_node(make_facts):
    (f,) = check_nan_on_one_node(_facts(make_facts, ONE_NODE), NanConfig())
    assert f.root_cause == "silent_data_corruption"
    assert f.culprits == ["node:gpu-a-022", "job:1185012"]
    assert [(e.file, e.line) for e in f.evidence] == [(LOG, 2), (LOG, 3)]
    kinds = [(a.type, a.node, a.job, a.exclude_nodes) for a in f.suggested_actions]
    # The diagnostic first, while the node can still start it; then the drain.
    assert kinds == [("run_gpu_diagnostic", "gpu-a-022", None, []), ("drain_node", "gpu-a-022", None, []),
                     ("resubmit_from_checkpoint", None, "1185012", ["gpu-a-022"]),
                     ("notify_owner", None, "1185012", [])]  # no checkpoint in the evidence
    assert f.message == "job 1185012: 2 NaN/inf loss line(s), all from ranks [9, 13] on gpu-a-022 (of 2 nodes; threshold 2)"


def test_megatron_nan_assertions_name_the_node(make_facts):
    (f,) = check_nan_on_one_node(_facts(make_facts, MEGATRON), NanConfig())
    assert f.culprits == ["node:gpu-a-022", "job:1185012"]
    assert "found NaN in local grad norm" in f.evidence[0].text


def test_nan_on_all_nodes_is_not_silent_corruption(make_facts):
    assert check_nan_on_one_node(_facts(make_facts, ALL_NODES), NanConfig()) == []


def test_single_node_job_or_unknown_layout_does_not_fire(make_facts):
    one_node = SACCT.replace("|2|billing=224,cpu=224,gres/gpu=16,mem=2000G,node=2|gpu-a-[021-022]|",
                             "|1|billing=112,cpu=112,gres/gpu=8,mem=1000G,node=1|gpu-a-022|")
    assert check_nan_on_one_node(_facts(make_facts, ONE_NODE, one_node), NanConfig()) == []
    # No GPU count anywhere: which node a rank runs on cannot be told.
    no_gpus = SACCT.replace("gres/gpu=16,", "")
    assert check_nan_on_one_node(_facts(make_facts, ONE_NODE, no_gpus), NanConfig()) == []


def test_threshold_is_configurable(make_facts):
    assert check_nan_on_one_node(_facts(make_facts, ONE_NODE), NanConfig(min_events=3)) == []


def test_hostile_log_text_is_only_quoted(make_facts):
    # A node name in an assertion that is not one of the job's nodes is ignored; the rank decides.
    hostile = MEGATRON.replace("node: gpu-a-022", "node: $(reboot)")
    (f,) = check_nan_on_one_node(_facts(make_facts, hostile), NanConfig())
    assert f.culprits == ["node:gpu-a-022", "job:1185012"] and "$(reboot)" in f.evidence[0].text


# Megatron's rerun state machine in one job: the NaN could not even be reproduced on the same GPU.
TRANSIENT = ("[rank9]: ERROR:megatron.core.rerun_state_machine:Rank 9, node gpu-a-022, device 1, iteration #4100: "
             "First rerun: unexpected result is not reproducible within the tolerance (nan != 2.31). Likely transient error\n")
REPRODUCED = TRANSIENT.replace("is not reproducible within the tolerance (nan != 2.31). Likely transient error",
                               "is reproducible within the tolerance (nan = nan). Need to rerun on a different GPU")


def test_a_gpu_failing_megatrons_result_validation_is_named(make_facts):
    (f,) = check_nan_on_one_node(_facts(make_facts, TRANSIENT), NanConfig())
    assert f.root_cause == "silent_data_corruption" and f.culprits == ["node:gpu-a-022", "job:1185012"]
    assert "transient" in f.message
    assert [a.type for a in f.suggested_actions][:2] == ["run_gpu_diagnostic", "drain_node"]
    # reproducible on its own GPU with no verdict from another GPU yet: nothing to blame the GPU for
    assert check_nan_on_one_node(_facts(make_facts, REPRODUCED), NanConfig()) == []
    # ... until the resumed run on another GPU says the first was wrong
    verdict = ("[rank9]: ERROR:megatron.core.rerun_state_machine:Rank 9, node gpu-a-021, device 1, iteration #4100: "
               "Possible persistent error!\n")
    (f,) = check_nan_on_one_node(_facts(make_facts, REPRODUCED + verdict), NanConfig())
    assert f.culprits[0] == "node:gpu-a-022" and "every time" in f.message and f.strength == "direct"


# Three jobs of three users over a week, each on a different set of nodes that all include gpu-c14, died on
# NaNs: a JAX job on gpu-c14 alone, a Megatron job whose assertion names the node, a PyTorch job whose
# NaN rank sits on gpu-c14. Each job alone has one report, below the per-job threshold.
SACCT_WEEK = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
5501|jax-vit|amy|ml|gpu|FAILED|1:0|2026-02-25T10:00:00|2026-02-25T10:00:00|2026-02-25T14:00:00|04:00:00|1-00:00:00|1|gres/gpu=8,node=1|gpu-c14|
5530|gpt-mega|bo|ml|gpu|FAILED|1:0|2026-02-27T10:00:00|2026-02-27T10:00:00|2026-02-27T19:00:00|09:00:00|2-00:00:00|2|gres/gpu=16,node=2|gpu-c[13-14]|
5577|llama-ft|cy|ml|gpu|FAILED|1:0|2026-03-02T10:00:00|2026-03-02T10:00:00|2026-03-02T12:00:00|02:00:00|1-00:00:00|2|gres/gpu=16,node=2|gpu-c[14-15]|
5590|llama-ft|cy|ml|gpu|COMPLETED|0:0|2026-03-03T10:00:00|2026-03-03T10:00:00|2026-03-03T20:00:00|10:00:00|1-00:00:00|2|gres/gpu=16,node=2|gpu-c[15-16]|
"""
WEEK_LOGS = {
    "5501": "2026-02-25 14:00:01 step 88100 loss: nan\nFloatingPointError: NaN loss detected at step 88100\n",
    "5530": "[rank12]: AssertionError: Rank 12: found NaN in local grad norm in backward pass before data-parallel "
            "communication collective. Device: 4, node: gpu-c14\n",
    "5577": "[rank3]: 2026-03-02 12:00:00 | step 900 | loss nan | grad_norm nan\n",
}


def _week(make_facts, logs=WEEK_LOGS):
    return make_facts(("slurm/sacct.txt", "sacct-text", SACCT_WEEK),
                      *[(f"logs/{j}/out", "job-log", t) for j, t in logs.items()],
                      **{f"logs/{j}/out": {"job": j} for j in logs})


def test_nan_failures_of_several_jobs_from_one_node_blame_that_node(make_facts):
    found = [f for f in check_nan_on_one_node(_week(make_facts), NanConfig()) if f.culprits == ["node:gpu-c14"]]
    (f,) = found
    assert f.root_cause == "silent_data_corruption" and "3 different job(s) of 3 user(s)" in f.message
    assert {a.type for a in f.suggested_actions} == {"run_gpu_diagnostic", "drain_node"}


def test_nan_failures_from_different_nodes_blame_none(make_facts):
    logs = dict(WEEK_LOGS, **{"5530": WEEK_LOGS["5530"].replace("node: gpu-c14", "node: gpu-c13")})
    logs["5577"] = "[rank12]: 2026-03-02 12:00:00 | step 900 | loss nan | grad_norm nan\n"  # rank 12: gpu-c15
    logs.pop("5501")
    assert check_nan_on_one_node(_week(make_facts, logs), NanConfig()) == []


def _hash_lines(ranks, params=("decoder.layers.3.mlp.linear_fc1.weight", "decoder.layers.3.mlp.linear_fc2.weight")):
    return "".join(f"[rank{r}]: [Rank {r}] Hash not matching for module.{p} in model chunk 0\n" for r in ranks for p in params)


def test_megatron_weight_hash_drift_on_one_replica_blames_its_node(make_facts):
    # 2 nodes x 8 ranks (block distribution): every rank on gpu-a-022 (8-15) reports its weights differ; one
    # rank on gpu-a-021 reports the same comparison from its side.
    log = _hash_lines(range(8, 16)) + _hash_lines([0], params=("decoder.layers.3.mlp.linear_fc1.weight",)) + (
        "[rank0]: AssertionError: Parameter hashes not matching across DP replicas\n")
    found = [f for f in check_nan_on_one_node(_facts(make_facts, log), NanConfig()) if "weight-hash" in f.message]
    (f,) = found
    assert f.culprits == ["node:gpu-a-022", "job:1185012"] and "16 of 17 mismatch lines" in f.message
    assert [a.type for a in f.suggested_actions][:2] == ["run_gpu_diagnostic", "drain_node"]


def test_weight_hash_mismatches_spread_over_both_nodes_blame_none(make_facts):
    log = _hash_lines([1, 2, 3, 9, 10, 11])
    assert not [f for f in check_nan_on_one_node(_facts(make_facts, log), NanConfig()) if "weight-hash" in f.message]
