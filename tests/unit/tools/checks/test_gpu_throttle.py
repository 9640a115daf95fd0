"""check_gpu_thermal_throttle on dcgm-exporter clock-event reasons / temperatures and nvidia-smi -q text."""

from __future__ import annotations

from pathlib import Path

from tools.checks.gpu_throttle import ThrottleConfig, check_gpu_thermal_throttle

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures"
# Context: job 75400 runs on gpu[010-012], so a throttled node there names it.
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             75400       gpu llm13b-p    alice  R    2:40:02      3 gpu[010-012]
"""


def _prom(node: str, reasons: int, temp: float, clock: float, gpus: int = 2) -> str:
    """dcgm-exporter text: DCGM_FI_DEV_CLOCKS_EVENT_REASONS (NVML bitmask), GPU_TEMP (C), SM_CLOCK (MHz)."""
    out = []
    for name, help_, value in (("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons (bitmask).", reasons),
                               ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", temp),
                               ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", clock)):
        out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
        out += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",'
                f'Hostname="{node}"}} {value:g}' for g in range(gpus)]
    return "\n".join(out) + "\n"


def _facts(make_facts, proms: dict[str, str], squeue: str = SQUEUE):
    return make_facts(("slurm/squeue.txt", "squeue-text", squeue),
                      *[(f"gpu/{n}.prom", "dcgm-prometheus-text", t) for n, t in proms.items()],
                      **{f"gpu/{n}.prom": {"node": n} for n in proms})


# Healthy peers under full load: SW power cap (0x4) is active, which is normal at TDP.
PEERS = {n: _prom(n, 0x4, 71, 1980) for n in ("gpu010", "gpu012")}
# Fires: gpu011 reports SW + HW thermal slowdown (0x20 | 0x40) at 89 C with clocks at 1095 MHz.
HOT = {**PEERS, "gpu011": _prom("gpu011", 0x4 | 0x20 | 0x40, 89, 1095)}


def test_thermal_slowdown_reasons_fire_with_temperature_and_clock_evidence(make_facts):
    (f,) = check_gpu_thermal_throttle(_facts(make_facts, HOT), ThrottleConfig())
    assert f.root_cause == "thermal_power_throttle"
    assert f.culprits == ["node:gpu011", "job:75400"]
    assert f.evidence[0].metric == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" and "HW thermal slowdown" in f.evidence[0].text
    assert (f.evidence[1].metric, f.evidence[1].value, f.evidence[1].unit) == ("DCGM_FI_DEV_GPU_TEMP", 89.0, "C")
    assert (f.evidence[2].metric, f.evidence[2].value) == ("DCGM_FI_DEV_SM_CLOCK", 1095.0)
    assert [(a.type, a.node) for a in f.suggested_actions] == [("run_gpu_diagnostic", "gpu011"), ("drain_node", "gpu011")]
    assert "max temp 89 C, threshold 85 C" in f.message and f.strength == "direct"


def test_nvidia_smi_q_reasons_fire_without_dcgm(make_facts):
    # The H100 fixture: GPU 00000000:2A:00.0 shows HW Slowdown / HW Thermal / SW Thermal Active at
    # 89 C; GPU 0 is idle and cool. A site without dcgm-exporter records only this.
    text = (FIXTURES / "nvidia-smi-q" / "550-h100-two-gpus.txt").read_text()
    facts = make_facts(("slurm/squeue.txt", "squeue-text", SQUEUE), ("gpu/gpu011-smi.txt", "nvidia-smi-q", text),
                       **{"gpu/gpu011-smi.txt": {"node": "gpu011"}})
    (f,) = check_gpu_thermal_throttle(facts, ThrottleConfig())
    assert f.culprits == ["node:gpu011", "job:75400"]
    assert "GPU(s) 1:" in f.evidence[0].text and "HW thermal slowdown" in f.evidence[0].text


def test_power_cap_under_full_load_does_not_fire(make_facts):
    # SW power cap alone is how a GPU at its power limit runs; 71 C is normal.
    assert check_gpu_thermal_throttle(_facts(make_facts, PEERS), ThrottleConfig()) == []


def test_idle_and_power_cap_reasons_from_nvidia_smi_q_do_not_fire(make_facts):
    # The V100 fixture: only "SW Power Cap : Active", 71 C.
    text = (FIXTURES / "nvidia-smi-q" / "470-v100-throttle-reasons.txt").read_text()
    facts = make_facts(("gpu/gpu010-smi.txt", "nvidia-smi-q", text), **{"gpu/gpu010-smi.txt": {"node": "gpu010"}})
    assert check_gpu_thermal_throttle(facts, ThrottleConfig()) == []


def test_temperature_threshold_is_configurable(make_facts):
    # No reason bits, only heat: 86 C is over the default 85 C and under a 90 C site threshold.
    warm = {**PEERS, "gpu011": _prom("gpu011", 0x4, 86, 1980)}
    (f,) = check_gpu_thermal_throttle(_facts(make_facts, warm), ThrottleConfig())
    assert f.strength == "heuristic" and "max temp 86 C, threshold 85 C" in f.message
    assert check_gpu_thermal_throttle(_facts(make_facts, warm), ThrottleConfig(hot_temp_c=90)) == []


def test_hostile_job_name_is_plain_data(make_facts):
    (f,) = check_gpu_thermal_throttle(_facts(make_facts, HOT, SQUEUE.replace("llm13b-p", "`halt`;#")), ThrottleConfig())
    assert f.culprits == ["node:gpu011", "job:75400"]
    assert all("halt" not in (a.reason or "") for a in f.suggested_actions)


def test_heat_alone_proposes_a_diagnostic_not_a_drain(make_facts):
    # Fires at low confidence: 86 C with no clock-event reason set is worth a look, not a drain.
    warm = {**PEERS, "gpu011": _prom("gpu011", 0x4, 86, 1980)}
    (f,) = check_gpu_thermal_throttle(_facts(make_facts, warm), ThrottleConfig())
    assert [a.type for a in f.suggested_actions] == ["run_gpu_diagnostic"]


def _prom_limit(host: str, reasons: int, clock: int, limit: float) -> str:
    labels = f'gpu="0",UUID="GPU-{host}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"'
    return (f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{labels}}} {reasons}\nDCGM_FI_DEV_SM_CLOCK{{{labels}}} {clock}\n"
            f"DCGM_FI_DEV_POWER_MGMT_LIMIT{{{labels}}} {limit}\n")


def test_a_power_limit_left_below_the_peers_throttles_that_node(make_facts):
    # Fires: s-a06's GPUs are capped at 350 W where its peers run at 700 W, SW power cap set, clocks low.
    files = [(f"gpu/{h}.prom", "dcgm-prometheus-text", _prom_limit(h, r, c, l)) for h, r, c, l in
             [("s-a05", 0, 1980, 700), ("s-a06", 4, 1335, 350), ("s-a07", 0, 1980, 700)]]
    (f,) = check_gpu_thermal_throttle(make_facts(*files), ThrottleConfig())
    assert f.culprits[0] == "node:s-a06" and "power limit 350 W (peers 700 W)" in f.message
    assert "drain_node" in [a.type for a in f.suggested_actions]


def test_sw_power_cap_everywhere_is_full_load_not_throttling(make_facts):
    # Does not fire: every node shows the SW power cap at the same clocks and limits (normal at full load).
    files = [(f"gpu/{h}.prom", "dcgm-prometheus-text", _prom_limit(h, 4, 1800, 700)) for h in ("s-a05", "s-a06", "s-a07")]
    assert check_gpu_thermal_throttle(make_facts(*files), ThrottleConfig()) == []
