#!/usr/bin/env bash
# Install Warden into .venv (Python >= 3.11, offline use needs nothing else) and say how to put
# `warden` on the PATH. Usage: bash scripts/install.sh [EXTRAS]   (EXTRAS e.g. "test")
set -euo pipefail
on_path="$(command -v warden 2>/dev/null || true)"
. "$(dirname "$0")/_venv.sh" "${1:-}"
echo "warden: $("$VENV/bin/warden" --version) is ready in $VENV (${SECONDS}s)" >&2
if [ "$on_path" != "$VENV/bin/warden" ]; then
  echo "warden: put it on the PATH:  export PATH=\"$VENV/bin:\$PATH\"   (add that line to ~/.bashrc to keep it)" >&2
fi
