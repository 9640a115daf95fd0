"""check_xid_at_cancel: Xid 43/45 at the moment a job was killed is the kill's echo, not a GPU fault."""

from __future__ import annotations

from tools.checks.unexplained import unexplained_signals
from tools.checks.xid_at_cancel import XidAtCancelConfig, check_xid_at_cancel

# sacct -P layout with NodeList; the job was cancelled by its owner at 09:40:05 (a different layout from
# the default column table: parsable, End before NodeList).
SACCT = """JobID|User|State|ExitCode|Start|End|NodeList
7001|ana|CANCELLED by 5012|0:0|2026-03-04T08:00:00|2026-03-04T09:40:05|g12
7001.0|ana|CANCELLED|0:15|2026-03-04T08:00:01|2026-03-04T09:40:05|g12
7002|ana|RUNNING|0:0|2026-03-04T09:41:00|Unknown|g12
"""
# journalctl -k times; Xid 45 (preemptive cleanup) and 43 on two GPUs, 1-2 s after the cancel.
ECHO = """Mar 04 09:40:06 g12 kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=88121, name=python3, Ch 00000010
Mar 04 09:40:06 g12 kernel: NVRM: Xid (PCI:0000:5e:00): 43, pid=88122, name=python3, Ch 00000011
Mar 04 09:40:07 g12 kernel: NVRM: Xid (PCI:0000:5e:00): 45, pid=88122, name=python3, Ch 00000011
"""
LATE = "Mar 04 10:02:44 g12 kernel: NVRM: Xid (PCI:0000:3b:00): 43, pid=90001, name=python3, Ch 00000010\n"
HW = "Mar 04 09:40:06 g12 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=88121, name=python3, GPU has fallen off the bus.\n"


def _facts(make_facts, kernel: str, sacct: str = SACCT):
    return make_facts(("slurm/sacct.txt", "sacct-text", sacct), ("kernel/g12.log", "kernel-log", kernel),
                      **{"kernel/g12.log": {"node": "g12"}})


def test_xids_at_the_second_of_a_cancel_are_explained(make_facts):
    facts = _facts(make_facts, ECHO)
    (f,) = check_xid_at_cancel(facts, XidAtCancelConfig())
    assert f.root_cause == "healthy" and f.culprits == [] and "job 7001" in f.message and "CANCELLED" in f.message
    assert unexplained_signals(facts, [f]) is None  # the Xids are not left over as unexplained signals


def test_an_xid_long_after_the_cancel_is_not_an_echo(make_facts):
    facts = _facts(make_facts, ECHO + LATE)
    assert check_xid_at_cancel(facts, XidAtCancelConfig()) == []
    assert unexplained_signals(facts, []) is not None


def test_a_hardware_xid_at_the_same_second_is_never_explained_away(make_facts):
    assert check_xid_at_cancel(_facts(make_facts, ECHO + HW), XidAtCancelConfig()) == []


def test_a_job_that_failed_on_its_own_is_not_a_cancel(make_facts):
    failed = SACCT.replace("CANCELLED by 5012", "FAILED").replace("|CANCELLED|0:15", "|FAILED|1:0")
    assert check_xid_at_cancel(_facts(make_facts, ECHO, failed), XidAtCancelConfig()) == []


def test_xid43_as_the_kubelet_killed_a_pod_on_a_kubernetes_node_is_the_kills_echo(make_facts):
    import json
    nodes = json.dumps({"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "gpu-a100-04"},
                        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]})
    # NOW is 10:15; "50m" ago is the minute from 09:24 to 09:25
    events = ("NAMESPACE   LAST SEEN   TYPE      REASON    OBJECT                  MESSAGE\n"
              "jhub        50m         Normal    Killing   pod/jupyter-u-lhughes   Stopping container notebook\n")
    xid = "[Wed Mar  4 09:24:29 2026] NVRM: Xid (PCI:0000:4e:00): 43, pid=2871194, name=python3, Ch 00000008\n"

    def facts(kernel: str):
        return make_facts(("k8s/nodes.json", "k8s-json", nodes), ("k8s/events.txt", "k8s-events-text", events),
                          ("kernel/gpu-a100-04.log", "kernel-log", kernel), **{"kernel/gpu-a100-04.log": {"node": "gpu-a100-04"}})

    (f,) = check_xid_at_cancel(facts(xid), XidAtCancelConfig())
    assert f.root_cause == "healthy" and "pod jhub/jupyter-u-lhughes" in f.message
    assert check_xid_at_cancel(facts(xid.replace("09:24:29", "09:51:02")), XidAtCancelConfig()) == []  # not at the kill
