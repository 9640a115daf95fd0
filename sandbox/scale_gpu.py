"""dcgm-exporter ``/metrics`` pages of a synthetic cluster, one per node, as dcgm-exporter 3.3 prints them.

Every family of the default counters and the DCP (profiling) set is printed with its HELP and TYPE
lines and one sample per GPU, labelled ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
``Hostname``, ``DCGM_FI_DRIVER_VERSION`` and, on a node running a job, ``hpc_job`` (dcgm-exporter's
HPC job mapping). Most families are ones Warden's checks never read (memory clock, energy, PCIe,
NVLink, encoder, remapped rows...), as on a real scrape. Names, types and help texts: NVIDIA
dcgm-exporter etc/default-counters.csv and dcp-metrics-included.csv, as in the recorded incidents.
"""

from __future__ import annotations

import random

from sandbox.scale_model import Gpu, Node

__all__ = ["dcgm_scrape", "PCI_BUS_IDS", "FAMILIES"]

PCI_BUS_IDS = ("00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
               "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0")

FAMILIES: list[tuple[str, str, str]] = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both "
     "protocol headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both "
     "protocol headers and data payloads - in bytes per second."),
]
"""(name, type, help) of every family a scrape prints, in dcgm-exporter's order."""


def _values(g: Gpu, rng: random.Random, uptime_s: float) -> dict[str, str]:
    busy = g.util_pct / 100.0
    return {
        "DCGM_FI_DEV_SM_CLOCK": str(g.sm_clock_mhz),
        "DCGM_FI_DEV_MEM_CLOCK": "2619",
        "DCGM_FI_DEV_MEMORY_TEMP": str(g.temp_c + 4),
        "DCGM_FI_DEV_GPU_TEMP": str(g.temp_c),
        "DCGM_FI_DEV_POWER_USAGE": f"{g.power_w:.3f}",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": str(int(uptime_s * (150 + 400 * busy) * 1000)),
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "0",
        "DCGM_FI_DEV_GPU_UTIL": str(int(g.util_pct)),
        "DCGM_FI_DEV_MEM_COPY_UTIL": str(int(g.util_pct * 0.4)),
        "DCGM_FI_DEV_ENC_UTIL": "0",
        "DCGM_FI_DEV_DEC_UTIL": "0",
        "DCGM_FI_DEV_XID_ERRORS": str(g.xid),
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": str(g.reasons),
        "DCGM_FI_DEV_FB_FREE": str(81559 - g.fb_used_mib),
        "DCGM_FI_DEV_FB_USED": str(g.fb_used_mib),
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": str(rng.choice((0, 0, 0, 0, 1, 2))),
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": str(g.dbe),
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": str(int(uptime_s * 3.1e6 * busy)),
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "0",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "0",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": "0",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": f"{busy * 0.97:.6f}",
        "DCGM_FI_PROF_SM_ACTIVE": f"{busy * 0.91:.6f}",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": f"{busy * 0.43:.6f}",
        "DCGM_FI_PROF_DRAM_ACTIVE": f"{busy * 0.38:.6f}",
        "DCGM_FI_PROF_PCIE_TX_BYTES": str(int(busy * 2.1e8 + rng.randint(0, 9999))),
        "DCGM_FI_PROF_PCIE_RX_BYTES": str(int(busy * 6.4e8 + rng.randint(0, 9999))),
    }


def dcgm_scrape(node: Node, rng: random.Random, *, uptime_s: float) -> str:
    """The ``/metrics`` page of ``node``'s dcgm-exporter (8 GPUs, H100 SXM)."""
    labels = []
    for g in range(len(node.gpus)):
        uuid = f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-" \
               f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
        job = f',hpc_job="{node.job}"' if node.job is not None and g < node.gpus_used else ""
        labels.append(f'gpu="{g}",UUID="{uuid}",pci_bus_id="{PCI_BUS_IDS[g]}",device="nvidia{g}",'
                      f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node.name}",'
                      f'DCGM_FI_DRIVER_VERSION="550.90.07"{job}')
    values = [_values(g, rng, uptime_s) for g in node.gpus]
    out: list[str] = []
    for name, kind, help_text in FAMILIES:
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}")
        out.extend(f"{name}{{{labels[g]}}} {values[g][name]}" for g in range(len(node.gpus)))
    return "\n".join(out) + "\n"
