#!/usr/bin/env bash
# Installs the packages, builds, and runs every test (ctest on both cores).
# CI (.ci/run) runs exactly this.
#
#   deploy/run-tests.sh [extra ctest options]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

deploy/install-deps.sh
deploy/build.sh
cd "$BUILD_DIR"
ctest -j"$(nproc)" --output-on-failure --timeout 900 "$@"
