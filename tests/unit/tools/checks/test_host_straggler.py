"""check_host_straggler: one node of a job whose CPUs are clocked far below its peers' (node_exporter)."""

from __future__ import annotations

import json

from tools.checks.host_straggler import HostStragglerConfig, check_host_straggler

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              5150       gpu  llm-pt    ravi  R    3:10:00      4 c[01-04]
              5151       gpu  eval      ravi  R      10:00      1 c05
"""


def _query(metric: str, values: dict[str, float], extra: dict[str, str] | None = None) -> str:
    result = [{"metric": {"__name__": metric, "instance": f"{n}:9100", "job": "node", **(extra or {})},
               "value": [1772619300, str(v)]} for n, v in values.items()]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


def _governors(govs: dict[str, str]) -> str:
    result = [{"metric": {"__name__": "node_cpu_scaling_governor", "cpu": "0", "governor": g, "instance": f"{n}:9100"},
               "value": [1772619300, "1"]} for n, g in govs.items()]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


def _facts(make_facts, freqs: dict[str, float], govs: dict[str, str] | None = None, metric="node_cpu_frequency_hertz"):
    files = [("slurm/squeue.txt", "squeue-text", SQUEUE), ("node/freq.json", "prometheus-query-json", _query(metric, freqs))]
    if govs:
        files.append(("node/gov.json", "prometheus-query-json", _governors(govs)))
    return make_facts(*files)


def test_one_node_on_powersave_holds_back_its_job(make_facts):
    freqs = {"c01": 3.1e9, "c02": 3.0e9, "c03": 1.2e9, "c04": 3.05e9, "c05": 1.1e9}
    govs = {"c01": "performance", "c02": "performance", "c03": "powersave", "c04": "performance"}
    (f,) = check_host_straggler(_facts(make_facts, freqs, govs), HostStragglerConfig())
    assert f.root_cause == "straggler_node" and f.culprits[:2] == ["node:c03", "job:5150"]
    assert "governor powersave" in f.message and [a.type for a in f.suggested_actions] == ["drain_node"]
    assert f.confidence > check_host_straggler(_facts(make_facts, freqs), HostStragglerConfig())[0].confidence


def test_a_single_node_job_and_an_even_fleet_do_not_fire(make_facts):
    # c05 is slow but alone in its job: nobody waits for it
    assert check_host_straggler(_facts(make_facts, {"c01": 3e9, "c02": 2.9e9, "c03": 3.1e9, "c04": 3e9, "c05": 1e9}),
                                HostStragglerConfig()) == []


def test_a_governor_alone_without_a_slower_clock_does_not_fire(make_facts):
    freqs = {"c01": 3.0e9, "c02": 3.0e9, "c03": 2.9e9, "c04": 3.0e9}
    govs = {"c01": "performance", "c02": "performance", "c03": "schedutil", "c04": "performance"}
    assert check_host_straggler(_facts(make_facts, freqs, govs), HostStragglerConfig()) == []


def test_an_aggregating_query_keeps_the_metric_name_in_its_text(make_facts):
    # avg by (instance) (node_cpu_scaling_frequency_hertz): the API drops __name__; the parser names the
    # samples by the query
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": f"{n}:9100"}, "value": [1772619300, str(v)]}
        for n, v in {"c01": 3.4e9, "c02": 3.4e9, "c03": 0.8e9, "c04": 3.4e9}.items()]}})
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("node/f.json", "prometheus-query-json", body),
                       **{"node/f.json": {"url": "http://prom:9090/api/v1/query?query=avg by (instance) "
                                                 "(node_cpu_scaling_frequency_hertz)"}})
    assert [f.culprits[0] for f in check_host_straggler(facts, HostStragglerConfig())] == ["node:c03"]
