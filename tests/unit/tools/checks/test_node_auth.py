"""check_node_auth_refused on slurmctld's journal (23.11 shape) with scontrol show node text."""

from __future__ import annotations

from tools.checks.node_auth import NodeAuthConfig, check_node_auth_refused

NODES = """NodeName=c03 Arch=x86_64 CoresPerSocket=32
   State=DOWN+NOT_RESPONDING ThreadsPerCore=1
   Reason=Not responding [slurm@2026-03-04T09:40:00]

NodeName=c04 Arch=x86_64 CoresPerSocket=32
   State=IDLE ThreadsPerCore=1
"""


def _refusal(minute: int, node: str = "c03", what: str = "Invalid credential") -> str:
    return (f"2026-03-04T09:{minute:02d}:11.000000+00:00 ctl slurmctld[812]: slurmctld: error: Munge decode failed: {what}\n"
            f"2026-03-04T09:{minute:02d}:11.000000+00:00 ctl slurmctld[812]: slurmctld: error: slurm_unpack_received_msg: "
            f"[[{node}]:40{minute:02d}2] auth_g_verify: MESSAGE_NODE_REGISTRATION_STATUS has authentication error: "
            "Invalid authentication credential\n")


def _facts(make_facts, journal: str):
    return make_facts(("slurm/nodes.txt", "scontrol-node-text", NODES), ("kernel/ctl.log", "kernel-log", journal),
                      **{"kernel/ctl.log": {"node": "ctl"}})


def test_registrations_refused_as_unauthentic_are_the_nodes_munge_key(make_facts):
    (f,) = check_node_auth_refused(_facts(make_facts, _refusal(10) + _refusal(20)), NodeAuthConfig())
    assert f.root_cause == "node_software_fault" and f.culprits == ["node:c03"]
    assert "refused 2 message(s) from c03" in f.message and "resuming it will not help" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "c03")]


def test_one_refusal_or_an_unknown_host_is_not_enough(make_facts):
    assert check_node_auth_refused(_facts(make_facts, _refusal(10)), NodeAuthConfig()) == []
    assert check_node_auth_refused(_facts(make_facts, _refusal(10, "x99") + _refusal(20, "x99")), NodeAuthConfig()) == []
