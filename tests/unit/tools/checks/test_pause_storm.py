"""check_pause_storm: a host flooding a RoCE fabric with PFC pauses, and the jobs elsewhere it hurt."""

from __future__ import annotations

import json

from tools.checks.pause_storm import PauseStormConfig, check_pause_storm

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              8100       gpu  llm-a     lee  R    3:00:00      2 h[01-02]
              8101       gpu  llm-b     kim  R    1:00:00      2 h[03-04]
"""
NCCL = ("h01:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
        "status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 hca mlx5_0\n")
TX = "[Thu Mar  4 09:55:01 2026] NETDEV WATCHDOG: eth2 (mlx5_core): transmit queue 5 timed out 10240 ms\n"


def _rates(values: dict[str, float]) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": f"{n}:9100", "device": "eth2"}, "value": [1772618000, str(v)]} for n, v in values.items()]}})


def _facts(make_facts, rates: dict[str, float], kernel: str = TX):
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("logs/8100/out", "job-log", NCCL),
                      ("net/pause.json", "prometheus-query-json", _rates(rates)), ("kernel/h04.log", "kernel-log", kernel),
                      **{"logs/8100/out": {"job": "8100"}, "kernel/h04.log": {"node": "h04"},
                         "net/pause.json": {"url": "http://prom:9090/api/v1/query?query=rate(node_ethtool_tx_prio3_pause[5m])"}})


def test_one_host_sending_pauses_far_above_the_fleet_is_the_culprit_and_jobs_elsewhere_its_victims(make_facts):
    (f,) = check_pause_storm(_facts(make_facts, {"h01": 3.0, "h02": 5.0, "h03": 2.0, "h04": 91000.0}), PauseStormConfig())
    assert f.root_cause == "interconnect_fault" and f.culprits[:2] == ["node:h04", "job:8100"]
    assert "TX timeouts" in f.message and {"drain_node", "resubmit_from_checkpoint"} <= {a.type for a in f.suggested_actions}
    resubmit = next(a for a in f.suggested_actions if a.type == "resubmit_from_checkpoint")
    assert resubmit.job == "8100" and resubmit.exclude_nodes == ["h04"]


def test_an_even_fleet_or_a_low_rate_is_no_storm(make_facts):
    assert check_pause_storm(_facts(make_facts, {"h01": 900.0, "h02": 800.0, "h03": 950.0, "h04": 1000.0}),
                             PauseStormConfig()) == []
    assert check_pause_storm(_facts(make_facts, {"h01": 1.0, "h02": 2.0, "h03": 1.0, "h04": 400.0}), PauseStormConfig()) == []
