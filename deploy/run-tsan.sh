#!/usr/bin/env bash
# Builds the threaded tests with ThreadSanitizer into their own build dir and
# runs them: the engine thread, the output thread, gRPC's callback threads and
# the CPU pool meet in these. CPU only, RelWithDebInfo (TSan needs symbols,
# and -O1+ keeps it fast enough). CI (.ci/run) runs it after the main tests.
#
#   deploy/run-tsan.sh [extra ctest options]
#
# Known third-party noise is suppressed in deploy/tsan.supp, each entry with
# its reason; a report in our code fails its test (TSan exits with 66).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
TARGETS=(output_processor_test scheduler_test batching_test server_test cancellation_test metrics_http_test
         client_test replica_set_test text_serving_test runner_state_test http_server_test auth_grpc_test
         backpressure_engine_test structured_output_engine_test grammar_test thread_pool_test)

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSERVE_CUDA=OFF \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread "${launcher[@]}"
cmake --build "$BUILD_DIR" --target "${TARGETS[@]}"

export TSAN_OPTIONS="suppressions=$PWD/deploy/tsan.supp second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
cd "$BUILD_DIR"
# Every GoogleTest case of the binaries built above; left out: the binaries
# not built here (ctest lists them as <target>_NOT_BUILT) and the Python
# tests (all-lowercase names), which run no code of ours under TSan.
ctest -j"$(nproc)" --output-on-failure --timeout 1800 -E '_NOT_BUILT|^[a-z_]+$' "$@"
