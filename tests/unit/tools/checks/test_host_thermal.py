"""check_host_thermal_throttle: the x86 therm_throt driver's lines in dmesg -T, journalctl -k and raw dmesg."""

from __future__ import annotations

from tools.checks.host_thermal import HostThermalConfig, check_host_thermal_throttle

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              7001       gpu  llm-pt    ravi  R    3:10:00      4 c[01-04]
"""

# dmesg -T on c03: a fan failed; the package and its cores keep crossing PROCHOT.
DMESG_T = """[Mon Nov 30 09:58:01 2026] mlx5_core 0000:41:00.0: Port module event: module 0, Cable plugged
[Mon Nov 30 10:00:01 2026] CPU12: Core temperature above threshold, cpu clock throttled (total events = 3412)
[Mon Nov 30 10:00:01 2026] CPU40: Core temperature above threshold, cpu clock throttled (total events = 3410)
[Mon Nov 30 10:00:01 2026] CPU12: Package temperature above threshold, cpu clock throttled (total events = 3500)
[Mon Nov 30 10:05:01 2026] CPU12: Core temperature/speed normal
"""

# journalctl -k on c02: one line under a short burst, recovered at once: ordinary.
JOURNAL_ONE = """Nov 30 10:01:02 c02 kernel: CPU3: Package temperature above threshold, cpu clock throttled (total events = 1)
Nov 30 10:01:02 c02 kernel: CPU3: Package temperature/speed normal
"""

# raw dmesg on c04 with a large running count in a single line.
RAW_COUNT = "[ 8812.331901] CPU7: Core temperature above threshold, cpu clock throttled (total events = 25031)\n"


def _facts(make_facts, *logs):
    files = [("slurm/squeue.txt", "squeue-text", SQUEUE)]
    meta = {}
    for node, text in logs:
        files.append((f"kernel/{node}.log", "kernel-log", text))
        meta[f"kernel/{node}.log"] = {"node": node}
    return make_facts(*files, **meta)


def test_a_node_that_keeps_throttling_is_a_thermal_fault_of_that_node(make_facts):
    (f,) = check_host_thermal_throttle(_facts(make_facts, ("c03", DMESG_T), ("c02", JOURNAL_ONE)), HostThermalConfig())
    assert f.root_cause == "thermal_power_throttle" and f.culprits == ["node:c03", "job:7001"]
    assert [a.type for a in f.suggested_actions] == ["drain_node"] and f.suggested_actions[0].node == "c03"
    assert "3 throttle lines" in f.message and "3500 events" in f.message


def test_one_line_with_a_large_running_count_fires_and_a_blip_does_not(make_facts):
    (f,) = check_host_thermal_throttle(_facts(make_facts, ("c04", RAW_COUNT)), HostThermalConfig())
    assert f.culprits[0] == "node:c04"
    assert check_host_thermal_throttle(_facts(make_facts, ("c02", JOURNAL_ONE)), HostThermalConfig()) == []
