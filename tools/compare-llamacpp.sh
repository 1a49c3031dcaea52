#!/usr/bin/env bash
# Runs llama.cpp (compiled from the llama-cpp-python sdist on PyPI, CPU only)
# and kvserve on the same GGUF file and prompt, and prints how many greedy
# tokens agree and both engines' decode tokens/s. Not part of CI: building
# llama.cpp takes ~10 minutes on 2 cores.
#
#   tools/compare-llamacpp.sh [BUILD_DIR] [GGUF]
#   (defaults: build, and SmolLM2-135M-Instruct fetched by tools/fetch-smollm2.sh)
#   LLAMACPP_VENV=DIR: a venv whose python imports llama_cpp (e.g. the sdist's
#   llama_cpp/ on PYTHONPATH with LLAMA_CPP_LIB_PATH at deploy/build-llamacpp.sh's
#   bin/ directory: no second build of llama.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
GGUF=${2:-$(tools/fetch-smollm2.sh)}
VENV=${LLAMACPP_VENV:-$BUILD_DIR/llamacpp-venv}

if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  echo "== building llama-cpp-python 0.3.36 from its sdist into $VENV (CPU only)"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF" \
    "$VENV/bin/python" -m pip install --quiet --no-binary llama-cpp-python \
    "llama-cpp-python==0.3.36"
fi
PORT=${PORT:-50071}
"$BUILD_DIR"/server/kvserve --model "$GGUF" --port "$PORT" --host 127.0.0.1 --metrics_port -1 --http_port -1 \
  --max_num_seqs 1 2>/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
"$BUILD_DIR"/client/kvserve-cli --target 127.0.0.1:"$PORT" --timeout-s 120 health >/dev/null
PYTHONPATH="$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" tools/compare_llamacpp.py \
  --gguf "$GGUF" --target 127.0.0.1:"$PORT" "${@:3}"
