"""check_gpu_corrected_ecc on dcgm-exporter pages (SBE counters, remap fields) with and without a kernel log."""

from __future__ import annotations

from tools.checks.gpu_corrected_ecc import CorrectedEccConfig, check_gpu_corrected_ecc

SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             51200       gpu  bert-pre    akim  R    2:10:02      1 a07
"""
DMESG = "[Tue Mar  3 10:00:01 2026] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"


def _page(sbe_gpu2: int, remap: bool, agg: bool = False) -> str:
    field = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL" if agg else "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
    out = f"# HELP {field} Total number of single-bit ECC errors.\n# TYPE {field} counter\n"
    out += "".join(f'{field}{{gpu="{g}",UUID="GPU-{g}",Hostname="a07"}} {sbe_gpu2 if g == 2 else 3}\n' for g in range(4))
    if remap:
        for f in ("DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_ROW_REMAP_FAILURE"):
            out += f"# TYPE {f} gauge\n" + "".join(f'{f}{{gpu="{g}",Hostname="a07"}} 0\n' for g in range(4))
    return out


def _facts(make_facts, page: str, kernel: bool):
    files = [("slurm/squeue.txt", "squeue-text", SQUEUE), ("gpu/a07.prom", "dcgm-prometheus-text", page)]
    ctx = {"gpu/a07.prom": {"node": "a07"}}
    if kernel:
        files.append(("logs/a07.dmesg", "kernel-log", DMESG))
        ctx["logs/a07.dmesg"] = {"node": "a07"}
    return make_facts(*files, **ctx)


def test_a_volatile_burst_with_nothing_to_judge_it_by_is_inconclusive_on_the_node(make_facts):
    (f,) = check_gpu_corrected_ecc(_facts(make_facts, _page(25000, remap=False), kernel=False), CorrectedEccConfig())
    assert f.root_cause == "inconclusive" and f.culprits == ["node:a07"] and f.suggested_actions == []
    assert "GPU 2 25,000 since driver load" in f.message and "row-remap" in f.message and "kernel log" in f.message


def test_remap_fields_read_but_no_kernel_log_still_names_the_log_only(make_facts):
    (f,) = check_gpu_corrected_ecc(_facts(make_facts, _page(25000, remap=True), kernel=False), CorrectedEccConfig())
    assert "kernel log" in f.message and "row-remap" not in f.message


def test_clean_remap_fields_and_a_quiet_kernel_log_mean_the_errors_were_corrected(make_facts):
    assert check_gpu_corrected_ecc(_facts(make_facts, _page(25000, remap=True), kernel=True), CorrectedEccConfig()) == []


def test_a_few_corrected_errors_or_a_lifetime_total_alone_are_not_a_burst(make_facts):
    for page, why in ((_page(400, remap=False), "under the volatile floor"),
                      (_page(250000, remap=False, agg=True), "aggregate counts are lifetime history, one reading")):
        assert check_gpu_corrected_ecc(_facts(make_facts, page, kernel=False), CorrectedEccConfig()) == [], why
