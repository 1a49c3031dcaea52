#!/usr/bin/env bash
# A short GPU proof for a session with little device time left (~3 minutes
# of commands): the ops, engine, decode- and prefill-attention (D 64, 128)
# tests (the 128-row tensor-core prefill, not yet run on a GPU), compute-sanitizer
# over the GEMV tests, the attention microbenchmark and the decode benchmark,
# then the decode benchmark again without the newest kernels (skinny GEMM,
# pre-norm GEMV, programmatic dependent launch) for their gain.
# deploy/gpu-check.sh is the full check; this is its quick subset.
#   deploy/gpu-quick-check.sh [BUNDLE (.gpu/bundle.tar.xz)]
# Logs go to $OUT (or ./gpu-check-out) as quick-check.log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUNDLE=${1:-.gpu/bundle.tar.xz}
OUT_DIR=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT_DIR"
B=$(mktemp -d)
tar -C "$B" -xf "$BUNDLE" || exit 2
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KVSERVE_TEST_DATA_DIR="$PWD/tests/data"
LOG="$OUT_DIR/quick-check.log"
run() {  # LIMIT_S NAME COMMAND...
  local limit=$1 name=$2
  shift 2
  echo "== $name" | tee -a "$LOG"
  timeout --kill-after=5 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "   -> rc $rc" | tee -a "$LOG"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$LOG"
run 30 cuda_ops_test "$B/bin/cuda_ops_test" --gtest_brief=1
run 30 cuda_engine_test "$B/bin/cuda_engine_test" --gtest_brief=1
run 90 cuda_attention_test_decode "$B/bin/cuda_attention_test" --gtest_brief=1 \
  --gtest_filter='*Decode*D64*:*Decode*D128*:*Prefill*D64*:*Prefill*D128*:CudaAttentionErrorsTest.*'
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
run 40 memcheck_gemv "$SAN" --tool memcheck --error-exitcode 1 "$B/bin/cuda_ops_test" \
  --gtest_brief=1 --gtest_filter='*Gemv*'
run 40 cuda_attention_bench "$B/bin/cuda_attention_bench"
run 60 cuda_decode_bench "$B/bin/cuda_decode_bench" --batches=1,8,32,64,128 --prefill=1x2048
# What the newest kernels bring: the same step without them (QUICK_AB=0 skips).
if [[ ${QUICK_AB:-1} != 0 ]]; then
  run 40 cuda_decode_bench_without_new "$B/bin/cuda_decode_bench" --batches=1,32 \
    --fast_kernels=flash_decode,prefill_mma,rope_kv_write,rmsnorm,gemv_small_m,gemv_silu_mul
fi
grep -E "^==|-> rc|FAILED|fallback|disagree|decode B|prefill B|batch |prefill 1|copy|serving:" "$LOG"
