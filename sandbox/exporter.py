"""A dcgm-exporter-format /metrics endpoint per sandbox node, on loopback.

Run as a script (stdlib only, so it starts fast and needs no package install)::

    python sandbox/exporter.py --state-file <state>/gpu/state.json --listen gpu01=9401 --listen gpu02=9402

Each listener serves one node's GPUs in the Prometheus text format that NVIDIA's dcgm-exporter
prints: DCGM field names (``DCGM_FI_DEV_GPU_UTIL`` …), its HELP texts and metric types (from its
default-counters.csv), and its labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``. Values are read from the state file on
every scrape, so faults injected by sandbox/faults.py show at the next scrape.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["render_metrics", "FIELDS", "main"]

# (DCGM field, Prometheus type, HELP text, state key); HELP texts follow dcgm-exporter's default-counters.csv.
FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "sm_clock_mhz"),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "mem_clock_mhz"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "mem_temp_c"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "gpu_temp_c"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power_w"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "_energy"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "pcie_replay"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util_pct"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "_mem_copy"),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", "_zero"),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", "_zero"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "xid"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "fb_free_mib"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "fb_used_mib"),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons.", "clocks_event_reasons"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "_gr_active"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", "_tensor"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data.", "_dram"),
)

_BOOT = time.time() - 86400.0  # energy counters count from a boot one day ago


def _value(gpu: dict[str, Any], key: str, now: float) -> float:
    """The reading for ``key``; busy-GPU readings get a small, smooth wobble so range queries look alive."""
    util = float(gpu["util_pct"])
    wobble = math.sin(now / 7.0 + gpu["index"]) if util > 0 else 0.0
    if key == "_energy":
        return round((now - _BOOT) * float(gpu["power_w"]) * 1000.0)
    if key == "_zero":
        return 0
    if key == "_mem_copy":
        return max(0, round(util * 0.45 + wobble))
    if key in ("_gr_active", "_tensor", "_dram"):
        scale = {"_gr_active": 0.98, "_tensor": 0.55, "_dram": 0.40}[key]
        return round(max(0.0, util / 100.0 * scale + wobble * 0.005), 6)
    if key == "util_pct":
        return max(0, min(100, round(util + wobble)))
    if key == "power_w":
        return round(float(gpu["power_w"]) + wobble * 3.0, 3)
    return gpu[key]


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def render_metrics(node: str, node_state: dict[str, Any], now: float | None = None) -> str:
    """The /metrics text of ``node`` from its entry in the state file."""
    now = time.time() if now is None else now
    lines: list[str] = []
    for field, kind, help_text, key in FIELDS:
        lines.append(f"# HELP {field} {help_text}")
        lines.append(f"# TYPE {field} {kind}")
        for gpu in node_state["gpus"]:
            labels = (
                f'gpu="{gpu["index"]}",UUID="{gpu["uuid"]}",pci_bus_id="{gpu["pci_bus_id"]}",'
                f'device="nvidia{gpu["index"]}",modelName="{node_state["model"]}",Hostname="{node}",'
                f'DCGM_FI_DRIVER_VERSION="{node_state["driver"]}"'
            )
            lines.append(f"{field}{{{labels}}} {_fmt(_value(gpu, key, now))}")
    return "\n".join(lines) + "\n"


def _handler(node: str, state_file: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/metrics":
                self._send(404, b"404 page not found\n", "text/plain")
                return
            try:
                state = json.loads(state_file.read_text())["nodes"][node]
            except (OSError, ValueError, KeyError) as exc:
                self._send(500, f"cannot read GPU state: {exc}\n".encode(), "text/plain")
                return
            self._send(200, render_metrics(node, state).encode(), "text/plain; version=0.0.4; charset=utf-8")

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # scrapes every 5 s would flood the log

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve every ``--listen NODE=PORT`` until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-file", type=Path, required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--listen", action="append", required=True, help="NODE=PORT, once per node")
    args = parser.parse_args(argv)
    servers = []
    for item in args.listen:
        node, port = item.split("=", 1)
        httpd = ThreadingHTTPServer((args.bind, int(port)), _handler(node, args.state_file))
        httpd.daemon_threads = True
        servers.append(httpd)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
