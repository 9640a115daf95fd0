"""check_fabric_drop on mlx5 port-state lines of several nodes (a leaf switch reboot) and NCCL remote errors."""

from __future__ import annotations

from tools.checks.fabric_drop import FabricDropConfig, check_fabric_drop

SACCT = """JobID|JobName|User|State|ExitCode|Start|End|NNodes|NodeList
5520311|neox|ada|FAILED|1:0|2026-03-04T08:00:00|2026-03-04T09:09:40|2|gn[009,012]
"""
NCCL = ("gn009:8811:8890 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.1.2.17<43211> "
        "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.2.9 remoteGids::ffff:10.1.2.17 hca mlx5_0\n")


def _port(node: str, t: str, state: str = "DOWN") -> str:
    return f"Mar 04 {t} {node} kernel: mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link {state}\n"


def _facts(make_facts, logs: dict[str, str]):
    files = [(f"kernel/{n}.log", "kernel-log", t) for n, t in logs.items()]
    files += [("slurm/sacct.txt", "sacct-text", SACCT), ("logs/5520311/err.log", "job-log", NCCL)]
    return make_facts(*files, **{f"kernel/{n}.log": {"node": n} for n in logs} | {"logs/5520311/err.log": {"job": "5520311"}})


def test_ports_of_several_nodes_dropping_together_are_the_switch_and_the_job_is_resubmitted(make_facts):
    logs = {n: _port(n, "09:02:17") + _port(n, "09:06:40", "ACTIVE") for n in ("gn017", "gn019", "gn021")}
    (f,) = check_fabric_drop(_facts(make_facts, logs), FabricDropConfig())
    assert f.root_cause == "interconnect_fault" and f.culprits == ["job:5520311"]
    assert "3 nodes' fabric ports went down within 10 s" in f.message
    assert [a.type for a in f.suggested_actions][:1] == ["resubmit_from_checkpoint"]
    assert not any(a.type == "drain_node" for a in f.suggested_actions)


def test_drops_spread_over_the_day_or_on_two_nodes_are_not_one_event(make_facts):
    spread = {"gn017": _port("gn017", "01:02:17"), "gn019": _port("gn019", "05:40:00"), "gn021": _port("gn021", "09:02:17")}
    assert check_fabric_drop(_facts(make_facts, spread), FabricDropConfig()) == []
    two = {n: _port(n, "09:02:17") for n in ("gn017", "gn019")}
    assert check_fabric_drop(_facts(make_facts, two), FabricDropConfig()) == []
