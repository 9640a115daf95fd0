"""A stand-in `dcgmi` for the sandbox, which has no GPUs: `dcgmi diag -r <level> -j` prints the JSON
DCGM 3.x prints (the shape of tests/fixtures/dcgmi-diag-json), from the node's emulated GPU state.

Installed as ``<state>/bin/dcgmi``. It runs as a Slurm job step (``srun ... dcgmi diag -r 2 -j``),
reads the node from ``SLURMD_NODENAME`` and the GPUs from ``<state>/gpu/state.json``: a GPU whose
state carries an Xid (the ``gpu_xid79`` fault) fails the memory and PCIe tests with DCGM's warning
texts, and the command exits non-zero as the real one does when a test fails. Only what Warden
reads is emulated; no diagnostic is run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sandbox.layout import Layout

__all__ = ["install", "SCRIPT_NAME"]

SCRIPT_NAME = "dcgmi"

_SCRIPT = r'''
import json, os, socket, sys

STATE = {state!r}
DEPLOYMENT = ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
              "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom"]


def main(argv):
    if len(argv) < 2 or argv[1] != "diag" or "-j" not in argv:
        print("stand-in dcgmi: only `dcgmi diag -r <level> -j` is emulated", file=sys.stderr)
        return 2
    level = int(argv[argv.index("-r") + 1]) if "-r" in argv else 1
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    with open(STATE) as f:
        gpus = json.load(f)["nodes"].get(node, {{}}).get("gpus", [])
    bad = {{g["index"]: g["xid"] for g in gpus if g.get("xid")}}

    def per_gpu(test):
        out = []
        for g in gpus:
            r = {{"gpu_ids": str(g["index"]), "status": "Pass"}}
            if g["index"] in bad:
                r = {{"gpu_ids": str(g["index"]), "status": "Fail", "warnings": [{{
                    "warning": f"GPU {{g['index']}} is not accessible: Xid {{bad[g['index']]}} reported "
                               f"(GPU has fallen off the bus) during {{test}}", "error_id": 43}}]}}
            out.append(r)
        return out

    cats = [{{"category": "Deployment", "tests": [{{"name": n, "results": [{{"status": "Pass"}}]}} for n in DEPLOYMENT]}}]
    if level >= 2:
        cats.append({{"category": "Integration", "tests": [{{"name": "PCIe", "results": per_gpu("PCIe")}}]}})
        cats.append({{"category": "Hardware", "tests": [{{"name": "GPU Memory", "results": per_gpu("GPU Memory")}}]}})
    print(json.dumps({{"DCGM GPU Diagnostic": {{"test_categories": cats}},
                      "Driver Version Detected": "535.183.01", "version": "3.3.5"}}, indent=4))
    return 226 if bad and level >= 2 else 0


sys.exit(main(sys.argv))
'''


def install(lay: Layout) -> Path:
    """Write ``<state>/bin/dcgmi`` (this interpreter in its #! line) and return its path."""
    dst = lay.bin / SCRIPT_NAME
    dst.parent.mkdir(parents=True, exist_ok=True)
    state = lay.gpu_state
    dst.write_text(f"#!{sys.executable}\n" + _SCRIPT.format(state=str(state)))
    dst.chmod(0o755)
    return dst
