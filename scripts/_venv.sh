# Sourced by install.sh, demo.sh and test.sh: make .venv with Python >= 3.11 and install Warden into it.
# Usage: . scripts/_venv.sh [extras]   e.g. ". scripts/_venv.sh test"  (always pass the argument: a
# sourced script without one sees the caller's own arguments)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WARDEN_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "warden: needs Python >= 3.11 as '$PY' (set PYTHON=...)" >&2; exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "warden: creating $VENV" >&2
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    # Debian splits venv out of python3; install it when we can.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "warden: installing python3-venv (apt-get)" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      rm -rf "$VENV"; "$PY" -m venv "$VENV"
    else
      echo "warden: '$PY -m venv' failed; install python3-venv (apt-get install python3-venv)" >&2; exit 2
    fi
  fi
fi

# pip's output, summed up on one line: how many packages are resolved, then installed.
_warden_progress() {
  local n=0 line tty=0 started=$SECONDS
  [ -t 2 ] && tty=1
  while IFS= read -r line; do
    case "$line" in
      Collecting*|Requirement\ already\ satisfied*)
        n=$((n + 1))
        if [ $tty = 1 ]; then printf '\rwarden: resolving dependencies: %d packages (%ds)' "$n" $((SECONDS - started)) >&2
        elif [ $((n % 20)) = 0 ]; then echo "warden: resolving dependencies: $n packages ($((SECONDS - started))s)" >&2; fi ;;
      Installing\ collected\ packages*)
        [ $tty = 1 ] && printf '\n' >&2
        local names="${line#Installing collected packages: }" commas
        commas="${names//[^,]/}"
        echo "warden: installing $(( ${#commas} + 1 )) packages ($((SECONDS - started))s so far)" >&2 ;;
      Successfully\ installed*)
        echo "warden: installed ($((SECONDS - started))s)" >&2 ;;
    esac
  done
  [ $tty = 1 ] && [ $n -gt 0 ] && printf '\n' >&2 || true
}

extras="${1:-}"
spec="$ROOT"; [ -n "$extras" ] && spec="$ROOT[$extras]"
stamp="$VENV/.warden-installed-$extras"
_warden_installed() {  # this install is done, or (no extras asked) an install with extras is, since it has more
  local s
  for s in "$stamp" $([ -z "$extras" ] && ls "$VENV"/.warden-installed-* 2>/dev/null); do
    [ -f "$s" ] && [ ! "$ROOT/pyproject.toml" -nt "$s" ] && return 0
  done
  return 1
}
if ! _warden_installed; then
  echo "warden: installing Warden${extras:+ with [$extras]} into $VENV (1-2 minutes; log: $VENV/pip.log)" >&2
  set +e
  "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off -e "$spec" 2>&1 \
    | tee "$VENV/pip.log" | _warden_progress
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    echo "warden: pip failed (exit $status); the last lines of $VENV/pip.log:" >&2
    tail -n 15 "$VENV/pip.log" >&2; exit 1
  fi
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
