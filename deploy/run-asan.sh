#!/usr/bin/env bash
# Builds kvserve with clang's AddressSanitizer + UndefinedBehaviorSanitizer
# (and LeakSanitizer, part of ASan) into its own build dir
# (deploy/configure-asan.sh; the fuzz targets of deploy/run-fuzz.sh come from
# the same build) and runs every CPU test that executes our C++ code: the
# GoogleTest binaries, and the Python tests that drive the instrumented
# kvserve binary. CI (.ci/run) runs it after the ThreadSanitizer stage.
#
#   deploy/run-asan.sh [extra ctest options]
#
# UB is fatal (-fno-sanitize-recover), so a report fails its test. Every
# report (also from a server process that a Python test starts and only
# kills) is written to $BUILD_DIR/sanitizer-logs; any file there fails the
# run, and its text is printed at the end.
#
# Known third-party noise is suppressed in deploy/lsan.supp and
# deploy/ubsan.supp, each entry with its reason (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
deploy/configure-asan.sh "$BUILD_DIR"

LOG_DIR=$PWD/$BUILD_DIR/sanitizer-logs
rm -rf "$LOG_DIR" && mkdir -p "$LOG_DIR"
# The options hold for the build too: gtest_discover_tests runs each test
# binary at build time to list its cases.
export ASAN_OPTIONS="detect_leaks=1:strict_init_order=1:check_initialization_order=1:log_path=$LOG_DIR/asan:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/deploy/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="suppressions=$PWD/deploy/ubsan.supp:print_stacktrace=1:halt_on_error=1:log_path=$LOG_DIR/ubsan:${UBSAN_OPTIONS:-}"
cmake --build "$BUILD_DIR"
# The real SmolLM2 GGUF (gguf_serving_test) comes from the main build's cache
# when deploy/run-tests.sh has fetched it; offline, that test skips.
if [ -d build/models ] && [ ! -e "$BUILD_DIR/models" ]; then ln -s ../build/models "$BUILD_DIR/models"; fi

cd "$BUILD_DIR"
# Left out (-E):
# - the PyPI-venv tests (the venv fixtures, tokenizer_diff, gguf_diff,
#   gguf_reference, openai_*): differential tests of results whose C++ paths
#   the GoogleTest binaries cover; the venvs would cost CI a second download;
# - rapid_reset_test, quantized_memory_test: they assert on the server's RSS,
#   which ASan's shadow memory and quarantine of freed memory (256 MB) inflate
#   by design;
# - soak_test: it asserts RSS stays within 10% (the same quarantine), and
#   its 2 minutes of load would take several under ASan; the main stage runs it;
# - kubernetes_manifests_test, compose_manifests_test: YAML/JSON schema checks
#   in a PyPI venv, no C++ of ours; dockerfile_test: the Dockerfiles' text
#   (it runs the binaries only for --helpfull);
# - cuda_smoke_test: a stub without CUDA.
status=0
ctest -j"$(nproc)" --output-on-failure --timeout 1800 \
  -E '_NOT_BUILT|venv_setup|tokenizer_diff_test|gguf_diff_test|gguf_reference_test|^openai_|rapid_reset_test|quantized_memory_test|soak_test|kubernetes_manifests_test|compose_manifests_test|dockerfile_test|CudaSmoke' \
  "$@" || status=$?

if compgen -G "$LOG_DIR/*" >/dev/null; then
  echo "=== sanitizer reports (from $LOG_DIR) ==="
  for f in "$LOG_DIR"/*; do echo "--- $f"; cat "$f"; done
  status=1
fi
exit "$status"
