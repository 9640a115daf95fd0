"""check_controller_probe_noise on slurmctld journal lines (ISO short-precise timestamps) with recorded sinfo."""

from __future__ import annotations

from tools.checks.controller_probes import ControllerProbeConfig, check_controller_probe_noise

SINFO = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*         up 2-00:00:00      4   idle g[01-04]\n"


def _journal(peers: list[str], every_s: list[int], extra: str = "") -> str:
    lines, t = [], 0
    for i, gap in enumerate(every_s):
        t += gap
        ip = peers[i % len(peers)]
        lines.append(f"2026-03-04T09:{t // 60:02d}:{t % 60:02d}.120000+00:00 ctl1 slurmctld[911]: slurmctld: error: "
                     f"slurm_receive_msg [{ip}:{40000 + i}]: Zero Bytes were transmitted or received")
    return "\n".join(lines) + "\n" + extra


def _facts(make_facts, journal: str, sinfo: str = SINFO):
    return make_facts(("slurm/sinfo.txt", "sinfo-text", sinfo), ("kernel/ctl1.log", "kernel-log", journal),
                      **{"kernel/ctl1.log": {"node": "ctl1"}})


def test_one_haproxy_peer_every_ten_seconds_is_a_health_check(make_facts):
    (f,) = check_controller_probe_noise(_facts(make_facts, _journal(["10.1.0.5"], [10] * 12)), ControllerProbeConfig())
    assert f.root_cause == "healthy" and f.culprits == ["node:ctl1"] and f.suggested_actions == []
    assert "12 'Zero Bytes were transmitted or received' errors, all from 10.1.0.5 every 10 s" in f.message


def test_many_clients_at_random_or_other_errors_or_a_failed_command_are_not_dismissed(make_facts):
    storm = _journal([f"10.2.0.{i}" for i in range(1, 30)], [1, 3, 1, 7, 2, 1, 1, 4, 9, 1, 2, 2] * 3)
    assert check_controller_probe_noise(_facts(make_facts, storm), ControllerProbeConfig()) == []
    irregular = _journal(["10.1.0.5"], [10, 10, 3, 40, 10, 1, 10])
    assert check_controller_probe_noise(_facts(make_facts, irregular), ControllerProbeConfig()) == []
    other = _journal(["10.1.0.5"], [10] * 12, "2026-03-04T09:05:00.000000+00:00 ctl1 slurmctld[911]: slurmctld: error: "
                                              "Node g03 not responding, setting DOWN\n")
    assert check_controller_probe_noise(_facts(make_facts, other), ControllerProbeConfig()) == []
    failed = "sinfo: error: slurm_load_partitions: Unable to contact slurm controller (connect failure)\n"
    assert check_controller_probe_noise(_facts(make_facts, _journal(["10.1.0.5"], [10] * 12), failed),
                                        ControllerProbeConfig()) == []
