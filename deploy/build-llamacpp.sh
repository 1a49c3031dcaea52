#!/usr/bin/env bash
# Builds llama.cpp's llama-batched-bench, llama-bench, llama-quantize and
# llama-completion (CPU only, -j2) from
# the llama.cpp vendored in the llama-cpp-python sdist on PyPI, into a cache
# directory, and prints the directory holding the binaries. Idempotent: a
# finished build is reused. Used by deploy/cpu-peer-bench.sh; not part of CI.
#
#   deploy/build-llamacpp.sh CACHE_DIR
#   LLAMACPP_SDIST=/path/llama_cpp_python-0.3.36.tar.gz  (skip the download)
set -euo pipefail
CACHE=${1:?usage: build-llamacpp.sh CACHE_DIR}
VERSION=0.3.36
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
BIN="$CACHE/llama.cpp-build/bin"
if [ -x "$BIN/llama-batched-bench" ] && [ -x "$BIN/llama-bench" ] && [ -x "$BIN/llama-quantize" ]; then
  echo "$BIN"
  exit 0
fi
SDIST=${LLAMACPP_SDIST:-$CACHE/llama_cpp_python-$VERSION.tar.gz}
if ! [ -f "$SDIST" ]; then
  echo "== downloading the llama-cpp-python $VERSION sdist from PyPI" >&2
  # pip prepares the sdist's metadata (installing its build backend) before
  # it keeps the file; the wheel itself is never built.
  /usr/bin/python3 -m pip download --quiet --no-deps --no-binary :all: \
    "llama-cpp-python==$VERSION" -d "$CACHE" >&2
fi
SRC="$CACHE/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -d "$SRC" ] || tar -xzf "$SDIST" -C "$CACHE" "llama_cpp_python-$VERSION/vendor/llama.cpp"
echo "== building llama.cpp (CPU, GGML_NATIVE without AMX, -j2) in $CACHE/llama.cpp-build" >&2
# No AMX: with -march=native on a CPU that lists it, ggml builds its AMX
# path, and in a VM whose kernel does not grant the tile state (as this
# build machine's) every Q4_0 / Q8_0 / K-quant product dies with SIGILL in
# ggml_backend_amx_mul_mat. kvserve has no AMX kernels either.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
cmake -S "$SRC" -B "$CACHE/llama.cpp-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" -DGGML_CUDA=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_TOOLS=ON >&2
nice -n 10 cmake --build "$CACHE/llama.cpp-build" \
  --target llama-batched-bench llama-bench llama-quantize llama-completion -j2 >&2
echo "$BIN"
