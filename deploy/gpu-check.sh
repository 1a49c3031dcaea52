#!/usr/bin/env bash
# Every CUDA check of kvserve in one command, on a GPU machine, from a bundle
# built elsewhere (the GPU machine has no gRPC, Protobuf or Abseil, and this
# script builds nothing). It runs:
#   1. every CUDA test binary (ops, attention sweeps, sampler, engine, smoke);
#   2. end to end: kvserve --device cuda on the built-in default model and on
#      the tiny-llama-gqa fixture, a generate with kvserve-cli each, SIGTERM;
#   3. cuda_decode_bench (batch 1 and 32, Llama-3.2-1B shape, with the copy
#      roofline) and, when PyTorch is there, deploy/hf_decode_bench.py on the
#      same shape, so that the two compare within one run;
# and writes gpu-check.json plus one log per step to $OUT (or ./gpu-check-out).
#
# On the build machine, from the repository root:
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSERVE_CUDA=ON
#   ninja -C build kvserve kvserve-cli cuda_smoke_test cuda_ops_test cuda_attention_test \
#     cuda_sample_test cuda_engine_test cuda_decode_bench
#   ../shared/gpu/bundle.sh .gpu build/server/kvserve build/client/kvserve-cli \
#     build/tests/cuda_smoke_test build/tests/cuda_ops_test build/tests/cuda_attention_test \
#     build/tests/cuda_sample_test build/tests/cuda_engine_test build/tests/bench/cuda_decode_bench
# The bundle is about 90 MB (35 of them OpenBLAS); gzipped about 30 MB, which
# fits a runner that carries at most 64 MiB:
#   tar -C .gpu -czf bundle.tgz . && mv bundle.tgz .gpu/    # carry .gpu/bundle.tgz
# then on the GPU machine, from the repository root (the tests read tests/data):
#   deploy/gpu-check.sh [BUNDLE=.gpu | BUNDLE.tgz]
# Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-.gpu}
if [[ -f $BUNDLE ]]; then  # a gzipped tarball of the bundle directory
  EXTRACTED=$(mktemp -d)
  tar -C "$EXTRACTED" -xzf "$BUNDLE" || { echo "cannot extract $BUNDLE"; exit 2; }
  BUNDLE=$EXTRACTED
fi
[[ -x $BUNDLE/bin/kvserve ]] || { echo "no bundle at $BUNDLE (see the header of $0)"; exit 2; }
OUT_DIR=${OUT:-gpu-check-out}
mkdir -p "$OUT_DIR"
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KVSERVE_TEST_DATA_DIR="$PWD/tests/data"
BIN="$BUNDLE/bin"
STEPS=()  # JSON objects, one per step
FAILED=0

# step NAME TIMEOUT_S COMMAND...: runs it, logs to $OUT_DIR/NAME.log, records the outcome.
# A shell function runs without `timeout` (which cannot call one); its own
# client calls carry deadlines.
step() {
  local name=$1 limit=$2
  shift 2
  local log="$OUT_DIR/$name.log" start end rc
  echo "== $name: $*"
  start=$(date +%s.%N)
  if declare -F "$1" >/dev/null; then
    "$@" >"$log" 2>&1
  else
    timeout "$limit" "$@" >"$log" 2>&1
  fi
  rc=$?
  end=$(date +%s.%N)
  tail -n 5 "$log" | sed 's/^/   /'
  local seconds
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  echo "   -> rc $rc in ${seconds}s"
  [[ $rc -eq 0 ]] || FAILED=1
  STEPS+=("{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $seconds, \"log\": \"$name.log\"}")
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$OUT_DIR/gpu.txt" 2>&1 || true
echo "== GPU: $(cat "$OUT_DIR/gpu.txt")"

# 1. Tests (each starts by skipping without a GPU: a skip here is a failure).
for t in cuda_smoke_test cuda_ops_test cuda_attention_test cuda_sample_test cuda_engine_test; do
  step "$t" 900 "$BIN/$t" --gtest_brief=1 --gtest_output="json:$OUT_DIR/$t.json"
  if grep -q "SKIPPED" "$OUT_DIR/$t.log"; then
    echo "   !! $t skipped tests on a GPU machine"
    FAILED=1
  fi
done

# 2. Serve and generate, then stop with SIGTERM (exit status 0 expected).
serve_check() {  # NAME PORT CLIENT_ARGS... (server args in SERVER_ARGS)
  local name=$1 port=$2
  shift 2
  "$BIN/kvserve" --device cuda --host 127.0.0.1 --port "$port" --metrics_port -1 "${SERVER_ARGS[@]}" \
    >"$OUT_DIR/$name.server.log" 2>&1 &
  local server=$!
  local ok=0
  if "$BIN/kvserve-cli" --target "127.0.0.1:$port" --timeout-s 120 health &&
     "$BIN/kvserve-cli" --target "127.0.0.1:$port" info | grep -q 'device: "cuda"' &&
     "$BIN/kvserve-cli" --target "127.0.0.1:$port" --timeout-s 120 generate --json "$@"; then
    ok=1
  fi
  kill -TERM "$server" 2>/dev/null
  for _ in $(seq 60); do  # --shutdown_grace_s is 5 s; a server still up after 60 s is hung
    kill -0 "$server" 2>/dev/null || break
    sleep 1
  done
  kill -KILL "$server" 2>/dev/null && echo "server did not stop on SIGTERM: killed"
  wait "$server"
  local server_rc=$?
  echo "server exit status $server_rc"
  grep -E "memory|KV cache|CUDA backend|serving" "$OUT_DIR/$name.server.log"
  [[ $ok -eq 1 && $server_rc -eq 0 ]]
}
SERVER_ARGS=()
step serve_default_model 300 serve_check serve_default_model 50611 \
  --prompt "Hello, kvserve! Tell me a story." --max-tokens 64 --seed 7 --temperature 0.8 --top-p 0.9 --ignore-eos
SERVER_ARGS=(--model tests/data/tiny-llama-gqa --dtype float32)
step serve_fixture 300 serve_check serve_fixture 50612 --prompt-ids 1,2,3,4,5 --max-tokens 16 --ignore-eos

# 3. Decode throughput, ours and transformers', in the same run.
step cuda_decode_bench 900 "$BIN/cuda_decode_bench" --batches=1,32 --json="$OUT_DIR/cuda_decode_bench.json"
if python3 -c "import torch, transformers; assert torch.cuda.is_available()" 2>/dev/null; then
  step hf_decode_bench 900 python3 deploy/hf_decode_bench.py --batches 1,32 --static \
    --json "$OUT_DIR/hf_decode_bench.json"
else
  echo "== hf_decode_bench: skipped (no PyTorch with CUDA here)"
fi

{
  echo "{"
  echo "  \"gpu\": \"$(tr -d '\n"' <"$OUT_DIR/gpu.txt")\","
  echo "  \"passed\": $([[ $FAILED -eq 0 ]] && echo true || echo false),"
  echo "  \"steps\": ["
  for i in "${!STEPS[@]}"; do
    sep=","
    [[ $i -eq $((${#STEPS[@]} - 1)) ]] && sep=""
    echo "    ${STEPS[$i]}$sep"
  done
  echo "  ],"
  echo "  \"cuda_decode_bench\": $(cat "$OUT_DIR/cuda_decode_bench.json" 2>/dev/null || echo null),"
  echo "  \"hf_decode_bench\": $(cat "$OUT_DIR/hf_decode_bench.json" 2>/dev/null || echo null)"
  echo "}"
} >"$OUT_DIR/gpu-check.json"
echo "== report: $OUT_DIR/gpu-check.json ($([[ $FAILED -eq 0 ]] && echo PASSED || echo FAILED))"
exit $FAILED
