#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, KVSERVE_FUZZ=ON) with Debian's clang
# and runs each for N seconds from its seed corpus
# tests/fuzz/<name>/. CI (.ci/run) runs it last.
#
#   deploy/run-fuzz.sh [seconds per target, default 30] [target ...]
#
# Each target also runs every file in its seed corpus first, so an input added
# there after a fix (a former crash) is a regression test. New inputs the
# fuzzer finds go to a scratch corpus under the build dir, never into the repo.
# A crash, leak, sanitizer report, timeout (-timeout) or memory blow-up
# (-rss_limit_mb) fails the run; the reproducer is kept under
# $BUILD_DIR/artifacts/ and its bytes are printed (base64) for the CI log.
set -euo pipefail
cd "$(dirname "$0")/.."
# The clang build of deploy/run-asan.sh (deploy/configure-asan.sh): in CI the
# fuzz targets are already built there.
BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
SECONDS_PER_TARGET=${1:-30}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(safetensors_header model_config tokenizer_json gguf chat_template request
           openai_request gbnf)
fi

deploy/configure-asan.sh "$BUILD_DIR"
cmake --build "$BUILD_DIR" --target "${TARGETS[@]/%/_fuzz}"

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
mkdir -p "$BUILD_DIR/artifacts"
failed=()
for name in "${TARGETS[@]}"; do
  seeds=tests/fuzz/$name
  scratch=$BUILD_DIR/corpus/$name
  mkdir -p "$scratch"
  echo "=== fuzz $name: ${SECONDS_PER_TARGET}s from $seeds ==="
  # -max_len: the seeds are a few KB; 64 KB leaves room to grow. -timeout: no
  # single input of ours may take 10 s. -rss_limit_mb: 2 GB is far above what
  # any parser needs for a 64 KB input.
  if ! "$BUILD_DIR/tests/fuzz/${name}_fuzz" -max_total_time="$SECONDS_PER_TARGET" \
       -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$BUILD_DIR/artifacts/$name-" "$scratch" "$seeds" \
       >"$BUILD_DIR/artifacts/$name.log" 2>&1; then
    failed+=("$name")
    tail -n 60 "$BUILD_DIR/artifacts/$name.log"
    for f in "$BUILD_DIR/artifacts/$name-"*; do
      [ -f "$f" ] || continue
      echo "--- reproducer $f (base64; run: $BUILD_DIR/tests/fuzz/${name}_fuzz $f)"
      base64 "$f" | head -c 8192
      echo
    done
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' \
      "$BUILD_DIR/artifacts/$name.log" | tr '\n' ' '
    echo
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzz: ${#TARGETS[@]} targets, ${SECONDS_PER_TARGET}s each, no findings"
