#!/usr/bin/env bash
# Builds what deploy/gpu-check.sh runs and packs it for a GPU machine that
# has no gRPC, Protobuf or Abseil (../shared/gpu/README.md): the programs and
# the shared libraries they need, except glibc, the C++ runtime and CUDA's
# own, as .gpu/bundle.tar.xz (~32 MB: with the working tree it fits a runner
# that carries at most 64 MiB; gzip would not). Prints the command to run.
#
#   deploy/make-gpu-bundle.sh [BUILD_DIR (build)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
BUNDLER=${GPU_BUNDLER:-../shared/gpu/bundle.sh}
[[ -x $BUNDLER ]] || { echo "make-gpu-bundle: $BUNDLER not found (GPU_BUNDLER=...)" >&2; exit 1; }
programs=(server/kvserve client/kvserve-cli client/kvserve-bench tools/kvserve-mkmodel
          tests/cuda_smoke_test tests/cuda_ops_test tests/cuda_attention_test
          tests/cuda_sample_test tests/cuda_engine_test
          tests/bench/cuda_decode_bench tests/bench/cuda_attention_bench)
targets=()
for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSERVE_CUDA=ON >/dev/null
ninja -C "$BUILD_DIR" "${targets[@]}"
rm -rf .gpu && mkdir -p .gpu
"$BUNDLER" .gpu/b "${programs[@]/#/$BUILD_DIR/}"
tar -C .gpu/b -cJf .gpu/bundle.tar.xz .
rm -rf .gpu/b
echo "bundle: .gpu/bundle.tar.xz ($(du -h .gpu/bundle.tar.xz | cut -f1));" \
     "on the GPU machine: deploy/gpu-check.sh .gpu tests,attention,bench,peers"
