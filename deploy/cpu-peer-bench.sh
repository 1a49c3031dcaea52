#!/usr/bin/env bash
# kvserve against llama.cpp on the CPU, on the same weights: one random
# TinyLlama-1.1B-shaped model (tools/write_random_gguf.py) written as F32,
# BF16, Q8_0, Q4_0, Q4_K_M (llama-quantize's mix: Q4_K with Q6_K for the
# output and some attn_v / ffn_down) and Q6_K GGUF files that both engines
# read. For each type, each engine
# runs ROUNDS times, alternately (the engine that goes first swaps every
# round); the table has the medians: decode tokens/s at each batch, prefill
# tokens/s, kvserve/llama.cpp ratios, the read-bandwidth ceiling kvserve's
# bench measured in the same runs, and the load average before and after.
# Not part of CI (building llama.cpp takes ~10-40 minutes on 2 cores).
#
# llama.cpp is llama-batched-bench built by deploy/build-llamacpp.sh; with
# LLAMACPP_VENV set to a venv holding llama-cpp-python (pip-built from the
# same sdist, as tools/compare-llamacpp.sh makes it), its libllama is driven
# by tools/llamacpp_batched_bench.py instead: the same loop, no extra build.
#
#   deploy/cpu-peer-bench.sh [BUILD_DIR]      (kvserve built there: cpu_decode_bench)
#   ROUNDS=2 BATCHES=1,8,32 PROMPT=32 NEW_TOKENS=16 PREFILL=512
#   TYPES="f32 bf16 q8_0 q4_0 q4_k_m q6_k"
#   SHAPE=tinyllama THREADS=2 PEER_BENCH_CACHE=BUILD_DIR/peer-bench
#   KVSERVE_BENCH=BUILD_DIR/tests/bench/cpu_decode_bench
#
# Both engines: THREADS threads, the weights as stored; for the block formats
# both round activations to int8 blocks (kvserve's default --cpu_activations
# auto, docs/quantized_weights.md), for F32 / BF16 both keep float32 (llama.cpp
# rounds them to bf16 for BF16 weights where the CPU has AVX512_BF16; kvserve
# keeps them exact, docs/cpu_small_m_gemm.md). Differences that stay: llama.cpp keeps its KV cache in
# float16 (kvserve: float32), and kvserve's decode goes through its engine
# (scheduler, sampling) where llama-batched-bench calls llama_decode directly.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${ROUNDS:-2}
BATCHES=${BATCHES:-1,8,32}
PROMPT=${PROMPT:-32}
NEW_TOKENS=${NEW_TOKENS:-16}
PREFILL=${PREFILL:-512}
TYPES=${TYPES:-f32 bf16 q8_0 q4_0 q4_k_m q6_k}
SHAPE=${SHAPE:-tinyllama}
THREADS=${THREADS:-2}
CACHE=${PEER_BENCH_CACHE:-$BUILD/peer-bench}
KVSERVE_BENCH=${KVSERVE_BENCH:-$BUILD/tests/bench/cpu_decode_bench}
[ -x "$KVSERVE_BENCH" ] || { echo "build cpu_decode_bench in $BUILD first" >&2; exit 2; }

if [ -n "${LLAMACPP_VENV:-}" ]; then
  LLAMA_BENCH=("$LLAMACPP_VENV/bin/python" tools/llamacpp_batched_bench.py)
else
  LLAMA_BENCH=("$(deploy/build-llamacpp.sh "$CACHE")/llama-batched-bench" -b 2048 -ub 512 -tb "$THREADS"
               --output-format jsonl)
fi
VENV="$CACHE/gguf-venv"
tests/tools/setup_reference_venv.sh "$VENV"  # the gguf package and NumPy
for t in $TYPES; do
  model="$CACHE/$SHAPE-$t.gguf"
  if ! [ -f "$model" ]; then
    echo "== writing $model" >&2
    "$VENV/bin/python" tools/write_random_gguf.py --shape "$SHAPE" --type "$t" --out "$model.tmp"
    mv "$model.tmp" "$model"
  fi
done

OUT=$(mktemp -d "$CACHE/run-XXXXXX")
MAX_BATCH=$(echo "$BATCHES" | tr ',' '\n' | sort -n | tail -1)
CTX=$(( MAX_BATCH * (PROMPT + NEW_TOKENS) > PREFILL + 1 ? MAX_BATCH * (PROMPT + NEW_TOKENS) : PREFILL + 1 ))
uptime > "$OUT/load-before"
cat "$OUT/load-before"
run_kvserve() {  # type round
  "$KVSERVE_BENCH" --model "$CACHE/$SHAPE-$1.gguf" --dtype auto --batches "$BATCHES" \
    --prompt "$PROMPT" --new_tokens "$NEW_TOKENS" --prefill "$PREFILL" --prefill_runs 1 \
    --json "$OUT/kvserve-$1-$2.json" > "$OUT/kvserve-$1-$2.log" 2>&1
}
run_llamacpp() {  # type round
  "${LLAMA_BENCH[@]}" -m "$CACHE/$SHAPE-$1.gguf" -c "$CTX" -t "$THREADS" \
    -npp "$PROMPT" -ntg "$NEW_TOKENS" -npl "$BATCHES" \
    > "$OUT/llamacpp-$1-$2.jsonl" 2> "$OUT/llamacpp-$1-$2.log"
  "${LLAMA_BENCH[@]}" -m "$CACHE/$SHAPE-$1.gguf" -c "$CTX" -t "$THREADS" \
    -npp "$PREFILL" -ntg 1 -npl 1 \
    > "$OUT/llamacpp-prefill-$1-$2.jsonl" 2>> "$OUT/llamacpp-$1-$2.log"
}
for round in $(seq 1 "$ROUNDS"); do
  for t in $TYPES; do
    echo "== round $round/$ROUNDS, $t" >&2
    if [ $((round % 2)) -eq 1 ]; then
      run_kvserve "$t" "$round"; run_llamacpp "$t" "$round"
    else
      run_llamacpp "$t" "$round"; run_kvserve "$t" "$round"
    fi
  done
done
uptime > "$OUT/load-after"
/usr/bin/python3 deploy/cpu_peer_bench_table.py "$OUT" --types $TYPES --batches "$BATCHES" \
  --prompt "$PROMPT" --new-tokens "$NEW_TOKENS" --prefill "$PREFILL" --threads "$THREADS" \
  --shape "$SHAPE" | tee "$OUT/table.md"
echo "(raw results in $OUT)"
