#!/usr/bin/env bash
# Configures the clang build that deploy/run-asan.sh and deploy/run-fuzz.sh
# share: KVSERVE_FUZZ=ON compiles every source with AddressSanitizer,
# UndefinedBehaviorSanitizer (fatal: -fno-sanitize-recover) and libFuzzer's
# coverage counters. The tests built there run under ASan + UBSan, the
# fuzz targets link libFuzzer; one build instead of two keeps CI's time
# down (docs/testing.md). CPU only; -O1 -g1 is the quickest build that still
# gives line numbers in reports. The Go, Java and Ruby example clients are
# left out (their tests skip): no C++ of theirs runs under the sanitizers,
# and the main stage (deploy/run-tests.sh) runs them.
#
#   deploy/configure-asan.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=$1
CC_BIN=${SANITIZER_CC:-clang}
CXX_BIN=${SANITIZER_CXX:-clang++}
if ! command -v "$CXX_BIN" >/dev/null; then
  echo "configure-asan: $CXX_BIN not found (deploy/install-deps.sh installs clang)" >&2
  exit 1
fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CC=$CC_BIN CXX=$CXX_BIN cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DKVSERVE_CUDA=OFF -DKVSERVE_FUZZ=ON -DKVSERVE_CLIENT_EXAMPLES=OFF "${launcher[@]}" >/dev/null
