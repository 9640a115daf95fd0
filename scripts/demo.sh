#!/usr/bin/env bash
# The main job: install Warden and diagnose a bundled incident with the built-in model (offline, no LLM).
set -euo pipefail
. "$(dirname "$0")/_venv.sh"
cd "$ROOT"
incident="${1:-evals/incidents/xid79-nccl-watchdog-other-rank}"
export WARDEN_HOME="${WARDEN_HOME:-$ROOT/.warden}"
warden diagnose "$incident"
