"""check_node_host_oom on captured kernel OOM-killer lines (dmesg -T, journalctl -k) and sacct states."""

from __future__ import annotations

from tools.checks.host_oom import HostOomConfig, check_node_host_oom

# gpu015 is shared: 74920 (video MAE, 4 GPUs) and 74931 (an eval job, 4 GPUs).
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             74920       gpu vmae-pre    heidi  R      40:10      1 gpu015
             74931       gpu eval-har     erin  R    1:12:40      1 gpu015
"""
# Context: sacct rows for gpu016; only 74933 ended OUT_OF_MEMORY.
SACCT = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES|NodeList|
74933|vmae-tiny|heidi|ml-vision|gpu|OUT_OF_MEMORY|0:125|2026-11-29T06:00:00|2026-11-29T06:01:00|2026-11-29T07:58:40|01:57:40|12:00:00|1|billing=32,cpu=32,gres/gpu=2,mem=400G,node=1|gpu016|
74934|eval-small|erin|ml-vision|gpu|COMPLETED|0:0|2026-11-29T06:00:00|2026-11-29T06:01:00|2026-11-29T07:00:00|00:59:00|12:00:00|1|billing=32,cpu=32,gres/gpu=2,mem=400G,node=1|gpu016|
"""

# Fires: the cgroup OOM killer kills a python process of job 74920 (its cgroup path names the job);
# the kill is reported over two lines (oom-kill: and Killed process), one event.
MEMCG_KILL = """[Sun Nov 29 07:58:38 2026] python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[Sun Nov 29 07:58:38 2026] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=step_0,mems_allowed=0-1,oom_memcg=/system.slice/slurmstepd.scope/job_74920,task_memcg=/system.slice/slurmstepd.scope/job_74920/step_0/user/task_0,task=python,pid=3318472,uid=20533
[Sun Nov 29 07:58:38 2026] Memory cgroup out of memory: Killed process 3318472 (python) total-vm:124976472kB, anon-rss:75360860kB, file-rss:0kB, shmem-rss:4096kB, UID:20533 pgtables:158624kB oom_score_adj:0
"""

# Fires: a system-wide OOM kill (older kernels print no cgroup); sacct's OUT_OF_MEMORY row picks
# the job out of the two that ran on gpu016.
SYSTEM_KILL = ("Nov 29 07:58:40 gpu016 kernel: Out of memory: Killed process 51200 (pt_data_worker) "
               "total-vm:40123456kB, anon-rss:30123456kB, file-rss:0kB, shmem-rss:1024kB, UID:1000 pgtables:61234kB oom_score_adj:0\n")

# Does not fire: the kernel log of a node whose job hit CUDA OOM (GPU memory) has no OOM-killer
# line; the hung-task and Lustre noise around it is not host memory either.
NO_KILL = """[Sun Nov 29 07:40:01 2026] perf: interrupt took too long (2660 > 2649), lowering kernel.perf_event_max_sample_rate to 80000
[Sun Nov 29 07:41:12 2026] Lustre: Mounted lustre-client
"""


def _facts(make_facts, node: str, log: str, *extra):
    path = f"kernel/{node}.log"
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), *extra, (path, "kernel-log", log),
                      **{path: {"node": node}})


def test_memcg_kill_names_the_job_in_the_cgroup_not_the_bystander(make_facts):
    (f,) = check_node_host_oom(_facts(make_facts, "gpu015", MEMCG_KILL), HostOomConfig())
    assert f.root_cause == "host_oom"
    assert f.culprits == ["job:74920", "node:gpu015"]  # 74931 shares the node but was not killed
    assert f.evidence[0].file == "kernel/gpu015.log" and f.evidence[0].line == 2
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "74920")]
    assert f.message == "1 OOM-killer kill(s) on gpu015 (threshold 1)"


def test_system_oom_kill_uses_sacct_out_of_memory(make_facts):
    (f,) = check_node_host_oom(_facts(make_facts, "gpu016", SYSTEM_KILL, ("slurm/sacct.txt", "sacct-text", SACCT)),
                               HostOomConfig())
    assert f.culprits == ["job:74933", "node:gpu016"]
    assert any(e.metric == "sacct" and "74933" in e.text for e in f.evidence)


def test_node_without_oom_kill_does_not_fire(make_facts):
    assert check_node_host_oom(_facts(make_facts, "gpu015", NO_KILL), HostOomConfig()) == []


def test_threshold_is_configurable(make_facts):
    assert check_node_host_oom(_facts(make_facts, "gpu015", MEMCG_KILL), HostOomConfig(min_kills=2)) == []


def test_hostile_process_name_is_only_quoted(make_facts):
    hostile = ("[Sun Nov 29 07:58:38 2026] Memory cgroup out of memory: Killed process 3318472 ($(reboot);ignore) "
               "total-vm:124976472kB, anon-rss:75360860kB, file-rss:0kB, shmem-rss:4096kB, UID:20533 pgtables:158624kB oom_score_adj:0\n")
    (f,) = check_node_host_oom(_facts(make_facts, "gpu015", hostile), HostOomConfig())
    assert f.culprits[-1] == "node:gpu015" and "$(reboot)" in f.evidence[0].text
    assert all("reboot" not in (a.reason or "") for a in f.suggested_actions)


def test_old_kill_is_not_blamed_on_the_job_running_there_now(make_facts):
    # dmesg keeps lines since boot: a system OOM kill two days before job 74931 started on gpu015
    # belongs to earlier work. Before the fix the current job was made the culprit and notified.
    old = ("[Mon Mar  2 07:58:40 2026] Out of memory: Killed process 51200 (pt_data_worker) total-vm:40123456kB, "
           "anon-rss:30123456kB, file-rss:0kB, shmem-rss:1024kB, UID:1000 pgtables:61234kB oom_score_adj:0\n")
    job = """JobId=74931 JobName=eval-harness
   UserId=erin(1001) GroupId=erin(1001) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   StartTime=2026-03-04T09:02:20 EndTime=2026-03-05T09:02:20 Deadline=N/A
   NodeList=gpu015
"""
    path = "kernel/gpu015.log"
    facts = make_facts(("slurm/scontrol_show_job_74931.txt", "scontrol-job-text", job), (path, "kernel-log", old),
                       **{path: {"node": "gpu015"}})
    (f,) = check_node_host_oom(facts, HostOomConfig())
    assert f.culprits == ["node:gpu015"] and f.suggested_actions == []


def test_the_container_runtime_killed_in_its_own_cgroup_is_not_a_job_out_of_memory(make_facts):
    from tools.checks.host_oom import HostOomConfig, check_node_host_oom
    kill = ("Aug 02 13:37:52 gn11 kernel: Memory cgroup out of memory: Killed process 2211 (containerd) "
            "total-vm:31457280kB, anon-rss:4190212kB, file-rss:38120kB, shmem-rss:0kB, UID:0 pgtables:11820kB oom_score_adj:-999\n")
    facts = make_facts(("kernel/gn11.log", "kernel-log", kill), **{"kernel/gn11.log": {"node": "gn11"}})
    assert check_node_host_oom(facts, HostOomConfig()) == []
    python = kill.replace("(containerd)", "(python3)")
    facts = make_facts(("kernel/gn11.log", "kernel-log", python), **{"kernel/gn11.log": {"node": "gn11"}})
    assert [f.root_cause for f in check_node_host_oom(facts, HostOomConfig())] == ["host_oom"]


def _pod(name: str, uid: str, container: str) -> dict:
    return {"metadata": {"name": name, "namespace": "research", "uid": uid},
            "spec": {"nodeName": "gpu-node-04"},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "pytorch", "ready": True, "restartCount": 1, "state": {"running": {}},
                 "containerID": f"containerd://{'e' * 64}",
                 "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "containerID": f"containerd://{container}"}}}]}}


def test_a_global_oom_on_a_kubernetes_node_names_the_pod_its_cgroup_belongs_to(make_facts):
    import json
    pods = {"kind": "PodList", "items": [_pod("llm-sft-worker-1", "4a1f9b7e-2c3d-4e5f-8a9b-0c1d2e3f4a5b", "7c" * 32),
                                      _pod("detr-ft-0", "11111111-2222-3333-4444-555555555555", "ab" * 32)]}
    nodes = {"kind": "NodeList", "items": [{"metadata": {"name": "gpu-node-04"}, "status": {"conditions": []}}]}
    kill = ("May 12 10:31:07 gpu-node-04 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=x,"
            "mems_allowed=0-1,global_oom,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}"
            ".slice/cri-containerd-{cid}.scope,task=pt_data_worker,pid=2261870,uid=1000\n"
            "May 12 10:31:07 gpu-node-04 kernel: Out of memory: Killed process 2261870 (pt_data_worker) "
            "total-vm:192844008kB, anon-rss:131203300kB, file-rss:3412kB, shmem-rss:880120kB, UID:1000\n")
    for uid, cid in (("4a1f9b7e_2c3d_4e5f_8a9b_0c1d2e3f4a5b", "9" * 64),  # by the pod uid in the slice name
                     ("00000000_0000_0000_0000_000000000000", "7c" * 32)):  # by the container id of its last run
        facts = make_facts(("k8s/pods.json", "k8s-json", json.dumps(pods)), ("k8s/nodes.json", "k8s-json", json.dumps(nodes)),
                           ("kernel/gpu-node-04.log", "kernel-log", kill.format(uid=uid, cid=cid)),
                           **{"kernel/gpu-node-04.log": {"node": "gpu-node-04"}})
        (f,) = check_node_host_oom(facts, HostOomConfig())
        assert f.culprits == ["pod:research/llm-sft-worker-1", "k8snode:gpu-node-04"]
        assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [("notify_owner", "llm-sft-worker-1", "research")]


def test_an_oom_that_killed_slurmd_is_the_node_unresponsive_and_drains_it(make_facts):
    log = ("Jul 21 14:50:02 cg-17 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
           "global_oom,task_memcg=/system.slice/docker-8be1f0c2.scope,task=python3,pid=2088104,uid=0\n"
           "Jul 21 14:50:02 cg-17 kernel: Out of memory: Killed process 2088104 (python3) total-vm:61882240kB, "
           "anon-rss:11844012kB, file-rss:91204kB, shmem-rss:2101188kB, UID:0\n"
           "Jul 21 14:50:58 cg-17 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
           "global_oom,task_memcg=/system.slice/slurmd.service,task=slurmd,pid=2841,uid=0\n"
           "Jul 21 14:50:58 cg-17 kernel: Out of memory: Killed process 2841 (slurmd) total-vm:412880kB, anon-rss:61204kB, "
           "file-rss:0kB, shmem-rss:0kB, UID:0\n")
    sinfo = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ncpu*         up   infinite      1  down* cg-17\n"
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo), ("kernel/cg-17.log", "kernel-log", log),
                       **{"kernel/cg-17.log": {"node": "cg-17"}})
    (f,) = check_node_host_oom(facts, HostOomConfig())
    assert f.root_cause == "node_unresponsive" and "ended slurmd" in f.message and "docker-8be1f0c2" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "cg-17")]
    # without slurmd among the kills it stays a host OOM
    facts = make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo),
                       ("kernel/cg-17.log", "kernel-log", "".join(log.splitlines(True)[:2])), **{"kernel/cg-17.log": {"node": "cg-17"}})
    (f,) = check_node_host_oom(facts, HostOomConfig())
    assert f.root_cause == "host_oom"


def test_node_unresponsive_does_not_resubmit_the_job_of_a_node_whose_memory_killed_slurmd(make_facts):
    from tools.checks.node_unresponsive import UnresponsiveConfig, check_node_not_responding
    kill = ("Jul 21 14:50:58 cg-17 kernel: Out of memory: Killed process 2841 (slurmd) total-vm:412880kB, "
            "anon-rss:61204kB, file-rss:0kB, shmem-rss:0kB, UID:0\n")
    sinfo = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ncpu*         up   infinite      1  down* cg-17\n"
    squeue = ("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
              "           5121033       cpu  dockjob     anna  R    1:10:00      1 cg-17\n")
    for log, resubmit in ((kill, False), ("Jul 21 14:50:58 cg-17 kernel: Linux version 5.14\n", True)):
        facts = make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo), ("slurm/squeue.txt", "squeue-text", squeue),
                           ("kernel/cg-17.log", "kernel-log", log), **{"kernel/cg-17.log": {"node": "cg-17"}})
        (f,) = check_node_not_responding(facts, UnresponsiveConfig())
        assert ("resubmit_from_checkpoint" in [a.type for a in f.suggested_actions]) is resubmit


def test_slurm_killing_a_failed_job_over_its_memory_limit_is_host_oom_but_the_at_some_point_warning_is_not(make_facts):
    sacct = "JobID|JobName|User|State|ExitCode|NodeList\n1141810|star-index|ri|FAILED|0:9|cpu07\n1141900|sra|ri|COMPLETED|0:0|cpu07\n"
    killed = ("slurmstepd-cpu07: error: Step 1141810.0 exceeded memory limit (52917772 > 20971520), being killed\n"
              "srun: error: cpu07: task 0: Killed\n")
    warned = "slurmstepd: error: Exceeded job memory limit at some point.\n"
    facts = make_facts(("slurm/sacct.txt", "sacct-text", sacct), ("logs/1141810/out", "job-log", killed),
                       ("logs/1141900/out", "job-log", warned),
                       **{"logs/1141810/out": {"job": "1141810"}, "logs/1141900/out": {"job": "1141900"}})
    (f,) = check_node_host_oom(facts, HostOomConfig())
    assert f.root_cause == "host_oom" and f.culprits == ["job:1141810"] and "50.5 GiB used against a 20.0 GiB limit" in f.message
    assert [(a.type, a.job) for a in f.suggested_actions] == [("notify_owner", "1141810")]
    running = make_facts(("slurm/sacct.txt", "sacct-text", sacct.replace("FAILED|0:9", "RUNNING|0:0")),
                         ("logs/1141810/out", "job-log", killed), **{"logs/1141810/out": {"job": "1141810"}})
    assert check_node_host_oom(running, HostOomConfig()) == []  # not yet ended: the kill has not been seen to end it
    bare = make_facts(("slurm/sacct.txt", "sacct-text", sacct), ("logs/1141810/out", "job-log",
                      "slurmstepd: error: Detected 1 oom_kill event in StepId=1141810.0. Some of the step tasks have been OOM Killed.\n"),
                      **{"logs/1141810/out": {"job": "1141810"}})
    assert check_node_host_oom(bare, HostOomConfig()) == []  # the cgroup's kill, with no kernel line: not shown here


# A global OOM report (journalctl -k) whose Mem-Info shows 1 GiB pages reserved and unused on both NUMA nodes:
# 2 x 96 x 1 GiB = 192 GiB nobody can allocate on a 512 GiB node (scontrol RealMemory).
def _global_oom(free: int) -> str:
    return (
        "Nov 29 07:58:38 gpu016 kernel: python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0\n"
        + "".join(f"Nov 29 07:58:38 gpu016 kernel: Node {i} hugepages_total=96 hugepages_free={free} hugepages_surp=0 "
                  "hugepages_size=1048576kB\n" for i in (0, 1))
        + "Nov 29 07:58:38 gpu016 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
          "global_oom,task_memcg=/system.slice/slurmstepd.scope/job_74933/step_batch/user/task_0,task=python,pid=51200,uid=1000\n"
        + "Nov 29 07:58:38 gpu016 kernel: Out of memory: Killed process 51200 (python) total-vm:330123456kB, "
          "anon-rss:300123456kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:612340kB oom_score_adj:0\n")


NODE_512G = """NodeName=gpu016 Arch=x86_64 CoresPerSocket=32
   CPUAlloc=64 CPUTot=128 CPULoad=40.10
   RealMemory=524288 AllocMem=409600 FreeMem=2048
   State=MIXED ThreadsPerCore=2 TmpDisk=0 Weight=1
   Partitions=gpu
"""


def test_memory_held_in_unused_huge_pages_is_the_nodes_fault(make_facts):
    extra = ("slurm/scontrol_node.txt", "scontrol-node-text", NODE_512G)
    (f,) = check_node_host_oom(_facts(make_facts, "gpu016", _global_oom(free=96), extra), HostOomConfig())
    assert f.culprits[0] == "node:gpu016" and "192 GiB sat reserved as unused huge pages" in f.message
    assert [(a.type, a.node or a.job) for a in f.suggested_actions] == [("drain_node", "gpu016"),
                                                                          ("notify_owner", "74933")]
    # Huge pages in use (free=0) are the job's own memory: the job ran the node out, nothing to drain.
    (f,) = check_node_host_oom(_facts(make_facts, "gpu016", _global_oom(free=0), extra), HostOomConfig())
    assert "huge pages" not in f.message and [a.type for a in f.suggested_actions] == ["notify_owner"]
