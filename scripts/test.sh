#!/usr/bin/env bash
# Everything the tests need, then the tests: Debian packages (as root), the venv with test extras,
# the sandbox cluster (munge, MariaDB + slurmdbd, slurmctld, 4 slurmd, Prometheus), pytest, teardown.
# Extra arguments go to pytest.
set -euo pipefail
. "$(dirname "$0")/_venv.sh" test
cd "$ROOT"
export WARDEN_HOME="${WARDEN_HOME:-$ROOT/.warden}"
mkdir -p "$WARDEN_HOME"
# CI also follows the README's quick start in a fresh clone (tests/integration/test_scripts.py).
[ "${CI:-}" = true ] && export WARDEN_TEST_INSTALL="${WARDEN_TEST_INSTALL:-1}"

# The real local model for the LLM integration test (built once per machine, then cached).
if ! bash "$ROOT/scripts/local_llm.sh" "$VENV/bin/python" >/dev/null; then
  echo "warden: the local model could not be installed; the real-model test will be skipped with a reason" >&2
  [ "${CI:-}" = true ] && { echo "warden: in CI the local model must install" >&2; exit 1; }
fi

sandbox_up=0
if [ "${WARDEN_SKIP_SANDBOX:-0}" != 1 ]; then
  if python -m sandbox up; then
    sandbox_up=1
  else
    echo "warden: the sandbox did not start; integration tests will be skipped with a reason" >&2
    [ "${CI:-}" = true ] && { echo "warden: in CI the sandbox must start" >&2; exit 1; }
  fi
fi
cleanup() { [ "$sandbox_up" = 1 ] && python -m sandbox down >/dev/null 2>&1 || true; }
trap cleanup EXIT

status=0
python -m pytest -q -p no:cacheprovider "$@" || status=$?
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a pass.
if [ $# -eq 0 ]; then
  # The eval gate over the bundled incidents: accuracy floor, safety, no regression on the baseline.
  mkdir -p build/eval
  warden eval --no-progress --min-accuracy 0.9 --baseline evals/baseline.json --report build/eval/report || status=1
fi
exit $status
