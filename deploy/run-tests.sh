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
status=0
ctest -j"$(nproc)" --output-on-failure --timeout 900 "$@" || status=$?
if [ "$status" -ne 0 ] && [ -f Testing/Temporary/LastTestsFailed.log ]; then
  # ctest printed each failure in the middle of a long log; repeat them last,
  # where a CI log's tail shows them.
  echo "=== the failed tests' output, again (from Testing/Temporary/LastTest.log) ==="
  while IFS=: read -r _ name; do
    awk -v t="$name" 'index($0, "Testing: " t) && $NF == t {p=1}
                      p {print}
                      p && index($0, "\"" t "\" end time") == 1 {p=0}' \
      Testing/Temporary/LastTest.log | tail -n 120
  done < Testing/Temporary/LastTestsFailed.log
fi
exit "$status"
