"""check_gpu_app_clocks on dcgm-exporter pages (clock-event bitmask + SM clock) with squeue."""

from __future__ import annotations

from tools.checks.gpu_app_clocks import GpuAppClocksConfig, check_gpu_app_clocks

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             77001       gpu  neox-20b    ylee  R    6:10:02      2 h[03-04]
"""


def _page(host: str, clock: int, reasons: int) -> str:
    return ("# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
            + "".join(f'DCGM_FI_DEV_SM_CLOCK{{gpu="{g}",Hostname="{host}"}} {clock}\n' for g in range(4))
            + "# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge\n"
            + "".join(f'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{gpu="{g}",Hostname="{host}"}} {reasons}\n' for g in range(4)))


def _facts(make_facts, h04_clock: int, h04_reasons: int):
    return make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE),
                      ("gpu/h03.prom", "dcgm-prometheus-text", _page("h03", 1980, 0)),
                      ("gpu/h04.prom", "dcgm-prometheus-text", _page("h04", h04_clock, h04_reasons)),
                      **{"gpu/h03.prom": {"node": "h03"}, "gpu/h04.prom": {"node": "h04"}})


def test_the_applications_clocks_bit_alone_on_slow_gpus_makes_a_straggler(make_facts):
    (f,) = check_gpu_app_clocks(_facts(make_facts, 1200, 0x2), GpuAppClocksConfig())
    assert f.root_cause == "straggler_node" and f.culprits == ["node:h04", "job:77001"]
    assert "4 GPU(s) held down" in f.message and [(a.type, a.node) for a in f.suggested_actions] == [("drain_node", "h04")]


def test_thermal_reasons_idle_gpus_or_full_clocks_are_not_this(make_facts):
    for clock, bits, why in ((1200, 0x2 | 0x40, "HW thermal too: gpu_throttle's"), (1200, 0x1, "idle"),
                             (1980, 0x2, "the setting is at the maximum: harmless")):
        assert check_gpu_app_clocks(_facts(make_facts, clock, bits), GpuAppClocksConfig()) == [], why
