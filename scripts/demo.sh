#!/usr/bin/env bash
# The main job: install Warden and diagnose a bundled incident with the built-in model (offline, no LLM).
# Usage: bash scripts/demo.sh [INCIDENT_DIR]   (default: evals/incidents/xid79-nccl-watchdog-other-rank)
set -euo pipefail
incident="${1:-evals/incidents/xid79-nccl-watchdog-other-rank}"
here="$PWD"
. "$(dirname "$0")/_venv.sh" ""
case "$incident" in /*) ;; *) [ -e "$here/$incident" ] && incident="$here/$incident" ;; esac
cd "$ROOT"
if [ ! -d "$incident" ]; then
  echo "warden: $incident: no such incident directory (try one of: $(cd evals/incidents && ls -d */ | head -3 | tr -d / | tr '\n' ' ')...)" >&2
  exit 2
fi
export WARDEN_HOME="${WARDEN_HOME:-$ROOT/.warden}"
warden diagnose "$incident"
