# Sourced by demo.sh and test.sh: make .venv with Python >= 3.11 and install Warden into it.
# Usage: . scripts/_venv.sh [extras]   e.g. ". scripts/_venv.sh test"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WARDEN_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "warden: needs Python >= 3.11 as '$PY' (set PYTHON=...)" >&2; exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    # Debian splits venv out of python3; install it when we can.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      rm -rf "$VENV"; "$PY" -m venv "$VENV"
    else
      echo "warden: '$PY -m venv' failed; install python3-venv (apt-get install python3-venv)" >&2; exit 2
    fi
  fi
fi
extras="${1:-}"
spec="$ROOT"; [ -n "$extras" ] && spec="$ROOT[$extras]"
stamp="$VENV/.warden-installed-$extras"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "warden: installing into $VENV (log: $VENV/pip.log)" >&2
  if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$spec" >"$VENV/pip.log" 2>&1; then
    cat "$VENV/pip.log" >&2; exit 1
  fi
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
