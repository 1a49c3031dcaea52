#!/usr/bin/env bash
# Configures and builds kvserve into build/ (Release, Ninja). CUDA is built
# when nvcc is found (KVSERVE_CUDA=AUTO); pass -DKVSERVE_CUDA=OFF to skip it.
#
#   deploy/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR"
