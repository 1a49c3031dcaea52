#!/usr/bin/env bash
# Every CUDA check of kvserve in one command, on a GPU machine, from a bundle
# built elsewhere (the GPU machine has no gRPC, Protobuf or Abseil, and this
# script builds nothing). It runs, in this order (STEPS picks some of them):
#   tests      every CUDA test binary (smoke, ops, attention sweeps, sampler, engine);
#   attention  cuda_attention_bench: each attention kernel alone, fast next to
#              its reference, with GB/s and TFLOP/s against the copy ceiling;
#   bench      cuda_decode_bench (batches 1, 8, 32, 64, 128 on the Llama-3.2-1B
#              shape, with the copy roofline; prefill TTFT of 1 x 2048 and
#              8 x 2048; batch 1 and 32 at a 4k context), with the fast
#              kernels, and batch 1 and 32 again with --fast_kernels=none;
#   peers      deploy/gpu_peers.py: PyTorch SDPA (FlashAttention-2, cuDNN) on
#              cuda_attention_bench's shapes, and transformers' prefill forward
#              of 1 x 2048 and 8 x 2048 tokens, when PyTorch is there;
#   profile    Nsight Compute (one metric: GPU time per launch) over one
#              decode run at batch 1 and 32 and one 2048-token prefill,
#              tabulated per kernel by deploy/gpu_profile_table.py;
#   memcheck   compute-sanitizer memcheck over cuda_ops_test and the fast
#              attention shapes of cuda_attention_test;
#   serve      end to end: kvserve --device cuda on the built-in default model and
#              on the tiny-llama-gqa fixture, a generate with kvserve-cli each, SIGTERM;
#   storm      a Llama-3.2-1B-shaped bf16 checkpoint (written by kvserve-mkmodel)
#              served to concurrent kvserve-bench clients, then a cancel storm
#              (deadline-cut streams, killed clients): KV blocks must return to 0
#   hf         deploy/hf_decode_bench.py on the same shape when PyTorch is there
#              (transformers' static cache compiles the decode step: minutes).
#
# On the build machine, from the repository root (deploy/make-gpu-bundle.sh
# does all of this and prints the run command):
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSERVE_CUDA=ON
#   ninja -C build <the programs below>
#   ../shared/gpu/bundle.sh .gpu/b build/server/kvserve ... build/tests/bench/cuda_attention_bench
#   tar -C .gpu/b -cJf .gpu/bundle.tar.xz . && rm -rf .gpu/b   # xz: ~32 MB, fits a 64 MiB carry
# then on the GPU machine, from anywhere (the tests read tests/data of this tree):
#   deploy/gpu-check.sh [BUNDLE (.gpu) | BUNDLE.tar.xz | BUNDLE.tgz] [STEPS]
# STEPS defaults to tests,attention,bench,peers,profile,memcheck,serve,storm,hf.
#
# What comes back: $OUT (or ./gpu-check-out) receives exactly two files, so
# that a runner returning only a few files loses nothing: gpu-check.json (the
# report: per step rc, seconds, failed and skipped tests, benchmark results)
# and gpu-check-logs.tgz (every step's log, gtest JSON and server log). Both
# are rewritten after every step, so a run cut off by its runner still
# reports the steps it finished.
#
# Time: GPU_CHECK_BUDGET_S (default 560 when $OUT is set, i.e. under a runner
# whose commands get 600 s; else unlimited) bounds the whole run: a step never
# outlives it, and steps that no longer fit are reported as not run. Under a
# 600 s runner run `tests,attention,bench,peers` in one call (the new
# kernels' proof and their speed), `profile,memcheck,serve,storm` in a
# second and `hf` in a third.
#
# GPU_CHECK_DEVICE=cpu runs the serve and storm steps on the CPU backend: a
# dry run of this script's own logic on a machine without a GPU (with, say,
# GPU_CHECK_STORM_PRESET=tiny-llama3, as the 1B shape is slow on a CPU).
#
# Exit status: 0 when every requested step ran and passed; 1 when one failed,
# skipped tests or did not run; 2 when the bundle is missing or a program
# cannot find a shared library.
set -uo pipefail
BUNDLE=${1:-.gpu}
STEPS_ARG=${2:-tests,attention,bench,peers,profile,memcheck,serve,storm,hf}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
# The bundle is named relative to the caller's directory, not the repository's.
[[ $BUNDLE == /* ]] || BUNDLE="$PWD/$BUNDLE"
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
OUT_DIR=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT_DIR"
if [[ -n ${OUT:-} ]]; then
  WORK=$(mktemp -d -t gpu-check.XXXXXX)  # logs: packed into $OUT after each step
else
  WORK="$OUT_DIR/logs"
  mkdir -p "$WORK"
fi
# Big files (the storm's ~2.5 GB checkpoint) go here, never under $WORK:
# $WORK is gzipped into $OUT after every step, and one returned file may
# hold at most 16 MiB. Removed after each step and when the script exits.
SCRATCH=$(mktemp -d -t gpu-check-scratch.XXXXXX)
EXTRACTED=""
cleanup() { rm -rf "$SCRATCH" ${EXTRACTED:+"$EXTRACTED"}; }
trap cleanup EXIT
trap 'exit 143' TERM INT  # so that a runner's SIGTERM still runs cleanup
# Logs larger than this stay out of the tarball (listed in the report), so
# that one runaway log cannot push the archive past what a runner returns.
MAX_LOG_BYTES=$((4 << 20))
BUDGET=${GPU_CHECK_BUDGET_S:-$([[ -n ${OUT:-} ]] && echo 560 || echo 0)}
START=$(date +%s)
STEPS=()    # JSON objects, one per step that ran
NOT_RUN=()  # steps left out for lack of time
LEFT_OUT=() # files of $WORK too large for the tarball
MISSING_LIBS=()
FAILED=0
FINISHED=false

json_strings() {  # ARGS... -> "a", "b" (names and paths only: no quotes inside)
  local out="" s
  for s in "$@"; do out+="${out:+, }\"${s//\"/}\""; done
  printf '%s' "$out"
}

# Writes $OUT_DIR/gpu-check.json and gpu-check-logs.tgz from what ran so far.
write_report() {
  local gpu passed=false i
  gpu=$(tr -d '\n"\\' <"$WORK/gpu.txt" 2>/dev/null)
  mapfile -t LEFT_OUT < <(cd "$WORK" && find . -type f -size +"$((MAX_LOG_BYTES / 1024))"k)
  [[ $FINISHED == true && $FAILED -eq 0 && ${#NOT_RUN[@]} -eq 0 ]] && passed=true
  {
    echo "{"
    echo "  \"gpu\": \"$gpu\","
    echo "  \"steps_requested\": \"$STEPS_ARG\","
    echo "  \"finished\": $FINISHED,"
    echo "  \"passed\": $passed,"
    echo "  \"seconds\": $(($(date +%s) - START)),"
    echo "  \"missing_libs\": [$(json_strings "${MISSING_LIBS[@]}")],"
    echo "  \"not_run\": [$(json_strings "${NOT_RUN[@]}")],"
    echo "  \"logs_left_out\": [$(json_strings "${LEFT_OUT[@]}")],"
    echo "  \"steps\": ["
    for i in "${!STEPS[@]}"; do
      echo "    ${STEPS[$i]}$([[ $i -lt $((${#STEPS[@]} - 1)) ]] && echo ,)"
    done
    echo "  ],"
    echo "  \"cuda_decode_bench\": $(cat "$WORK/cuda_decode_bench.json" 2>/dev/null || echo null),"
    echo "  \"cuda_decode_bench_4k\": $(cat "$WORK/cuda_decode_bench_4k.json" 2>/dev/null || echo null),"
    local sep="" p
    printf '  "profile": {'
    for p in b1 b32 prefill; do
      printf '%s"%s": %s' "$sep" "$p" "$(cat "$WORK/profile_$p.json" 2>/dev/null || echo null)"
      sep=", "
    done
    echo "},"
    echo "  \"cuda_decode_bench_reference_kernels\": $(cat "$WORK/cuda_decode_bench_reference.json" 2>/dev/null || echo null),"
    echo "  \"cuda_attention_bench\": $(cat "$WORK/cuda_attention_bench.json" 2>/dev/null || echo null),"
    echo "  \"gpu_peers\": $(cat "$WORK/gpu_peers.json" 2>/dev/null || echo null),"
    echo "  \"hf_prefill\": $(cat "$WORK/hf_prefill.json" 2>/dev/null || echo null),"
    echo "  \"hf_decode_bench\": $(cat "$WORK/hf_decode_bench.json" 2>/dev/null || echo null)"
    echo "}"
  } >"$OUT_DIR/gpu-check.json.tmp" && mv "$OUT_DIR/gpu-check.json.tmp" "$OUT_DIR/gpu-check.json"
  tar -C "$WORK" -czf "$OUT_DIR/gpu-check-logs.tgz.tmp" \
    --exclude-from=<(printf '%s\n' "${LEFT_OUT[@]}") . 2>/dev/null &&
    mv "$OUT_DIR/gpu-check-logs.tgz.tmp" "$OUT_DIR/gpu-check-logs.tgz"
}

if [[ -d $BUNDLE && ! -x $BUNDLE/bin/kvserve ]]; then  # .gpu holding bundle.tar.xz
  for f in "$BUNDLE"/bundle.tar.xz "$BUNDLE"/bundle.tgz; do [[ -f $f ]] && BUNDLE=$f && break; done
fi
if [[ -f $BUNDLE ]]; then  # a tarball (xz or gzip) of the bundle directory
  EXTRACTED=$(mktemp -d)
  tar -C "$EXTRACTED" -xf "$BUNDLE" || { echo "cannot extract $BUNDLE"; exit 2; }
  BUNDLE=$EXTRACTED
fi
[[ -x $BUNDLE/bin/kvserve ]] || { echo "no bundle at $BUNDLE (see the header of $0)"; exit 2; }
BIN="$BUNDLE/bin"
export KVSERVE_TEST_DATA_DIR="$ROOT/tests/data"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$WORK/gpu.txt" 2>&1 || true
echo "== GPU: $(cat "$WORK/gpu.txt")"

# The bundle's libraries serve our programs only: exported to every process,
# they would also replace the system's (zlib, OpenSSL, PCRE2...) under
# python3 and the tools this script runs. CUDA's own libraries are not in
# the bundle; when the loader does not find them, look where CUDA and
# PyTorch's wheels keep them.
KV_LD="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
missing_libs() {
  local f
  for f in "$BIN"/*; do LD_LIBRARY_PATH="$KV_LD" ldd "$f" 2>&1; done | awk '/not found/ {print $1}' | sort -u
}
mapfile -t MISSING_LIBS < <(missing_libs)
if [[ ${#MISSING_LIBS[@]} -gt 0 ]]; then
  echo "== not found by the loader: ${MISSING_LIBS[*]}; searching CUDA and Python's site-packages"
  roots=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib)
  mapfile -t -O ${#roots[@]} roots < <(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  for lib in "${MISSING_LIBS[@]}"; do
    found=$(find "${roots[@]}" -name "$lib" -print -quit 2>/dev/null)
    [[ -n $found ]] && KV_LD="$KV_LD:$(dirname "$found")" && echo "   $lib: $found"
  done
  mapfile -t MISSING_LIBS < <(missing_libs)
fi
for f in "$BIN"/*; do echo "== $f"; LD_LIBRARY_PATH="$KV_LD" ldd "$f" 2>&1; done >"$WORK/ldd.log"
if [[ ${#MISSING_LIBS[@]} -gt 0 ]]; then
  echo "!! still not found: ${MISSING_LIBS[*]} (see ldd.log in the logs)"
  FAILED=1
  write_report
  exit 2
fi
export KV_LD BIN WORK SCRATCH DEVICE

# step NAME LIMIT_S COMMAND...: runs it (a shell function too) under
# `timeout`, logs to $WORK/NAME.log and records the outcome in the report.
step() {
  local name=$1 limit=$2
  shift 2
  local log="$WORK/$name.log" start end rc seconds left
  if ((BUDGET > 0)); then
    left=$((BUDGET - ($(date +%s) - START) - 15))  # 15 s to write the report
    if ((left < 30)); then
      echo "== $name: not run (GPU_CHECK_BUDGET_S=$BUDGET spent)"
      NOT_RUN+=("$name")
      write_report
      return
    fi
    ((limit > left)) && limit=$left
  fi
  echo "== $name (at most ${limit}s): $*"
  if declare -F "$1" >/dev/null; then set -- bash -c '"$@"' "$1" "$@"; fi
  start=$(date +%s.%N)
  # timeout signals its whole process group: a server started by the step too.
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  ((rc == 124 || rc == 137)) && echo "   !! timed out after ${limit}s"
  if ((rc != 0)); then  # the first failure messages, then how it ended
    grep -m 30 -E -A 3 ': Failure|\[  FAILED  \]|rror' "$log" | head -n 60 | sed 's/^/   /'
  fi
  tail -n 4 "$log" | sed 's/^/   /'
  echo "   -> rc $rc in ${seconds}s"
  ((rc == 0)) || FAILED=1
  # gtest: the failed tests by name, and skips (a skip on a GPU machine is a failure).
  local failed_tests skipped=false
  mapfile -t failed_tests < <(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_/.]*\).*/\1/p' "$log" | grep '\.' | sort -u)
  if grep -q '\[  SKIPPED \]' "$log"; then
    echo "   !! $name skipped tests on a GPU machine"
    skipped=true
    FAILED=1
  fi
  STEPS+=("{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $seconds, \"skipped_tests\": $skipped, \"failed_tests\": [$(json_strings "${failed_tests[@]}")], \"log\": \"$name.log\"}")
  write_report
}

wants() { [[ ",$STEPS_ARG," == *",$1,"* ]]; }

# 1. Tests (each starts by skipping without a GPU: a skip here is a failure).
if wants tests; then
  for t in cuda_smoke_test:60 cuda_ops_test:300 cuda_attention_test:400 cuda_sample_test:300 \
           cuda_engine_test:400; do
    name=${t%%:*}
    step "$name" "${t##*:}" env LD_LIBRARY_PATH="$KV_LD" "$BIN/$name" --gtest_brief=1 \
      --gtest_output="json:$WORK/$name.json"
  done
fi

# 2. The kernels' speed: attention alone (fast against reference), the whole
#    decode step and prefill with and without the fast kernels, the peers.
if wants attention; then
  step cuda_attention_bench 150 env LD_LIBRARY_PATH="$KV_LD" "$BIN/cuda_attention_bench" \
    --json="$WORK/cuda_attention_bench.json"
fi
if wants bench; then
  step cuda_decode_bench 200 env LD_LIBRARY_PATH="$KV_LD" "$BIN/cuda_decode_bench" \
    --batches=1,8,32,64,128 --prefill=1x2048,8x2048 --json="$WORK/cuda_decode_bench.json"
  step cuda_decode_bench_4k 120 env LD_LIBRARY_PATH="$KV_LD" "$BIN/cuda_decode_bench" \
    --batches=1,32 --prompt=3968 --new_tokens=64 --json="$WORK/cuda_decode_bench_4k.json"
  step cuda_decode_bench_reference 200 env LD_LIBRARY_PATH="$KV_LD" "$BIN/cuda_decode_bench" \
    --batches=1,32 --prefill=1x2048 --fast_kernels=none --json="$WORK/cuda_decode_bench_reference.json"
fi
if wants peers; then
  if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    step gpu_peers 120 env PYTHONUNBUFFERED=1 python3 deploy/gpu_peers.py --json "$WORK/gpu_peers.json"
    if python3 -c "import transformers" 2>/dev/null; then
      step hf_prefill 120 env PYTHONUNBUFFERED=1 python3 deploy/hf_decode_bench.py --batches "" \
        --prefill 1x2048,8x2048 --json "$WORK/hf_prefill.json"
    fi
  else
    echo "== gpu_peers: skipped (no PyTorch with CUDA here)"
  fi
fi

# The per-kernel profile: only the measured runs (cuda_decode_bench
# --profile brackets them), graphs off so that every kernel is its own launch.
profile_run() {  # NAME TABLE_FLAGS -- BENCH_ARGS...
  local name=$1 table=$2 ncu
  shift 3
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  [[ -x $ncu ]] || { echo "no ncu (Nsight Compute) on this machine"; return 1; }
  env LD_LIBRARY_PATH="$KV_LD" "$ncu" --profile-from-start off --clock-control none \
    --metrics gpu__time_duration.sum --csv --page raw \
    "$BIN/cuda_decode_bench" --profile --cuda_graphs=false "$@" >"$SCRATCH/$name.csv" || return 1
  python3 "$ROOT/deploy/gpu_profile_table.py" "$SCRATCH/$name.csv" $table \
    --json "$WORK/profile_$name.json"
}
export -f profile_run
export ROOT
if wants profile; then
  step profile_b1 120 profile_run b1 "" -- --batches=1 --new_tokens=12
  step profile_b32 120 profile_run b32 "" -- --batches=32 --new_tokens=12
  step profile_prefill 120 profile_run prefill --whole -- --batches= --prefill=1x2048
fi

# compute-sanitizer memcheck: the ops, and the attention shapes the fast
# kernels serve (D 64 and 128, both block sizes) and the error cases.
if wants memcheck; then
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
  if [[ -x $sanitizer ]]; then
    step memcheck_ops 150 env LD_LIBRARY_PATH="$KV_LD" "$sanitizer" --tool memcheck \
      --error-exitcode 1 "$BIN/cuda_ops_test" --gtest_brief=1
    step memcheck_attention 150 env LD_LIBRARY_PATH="$KV_LD" "$sanitizer" --tool memcheck \
      --error-exitcode 1 "$BIN/cuda_attention_test" --gtest_brief=1 \
      --gtest_filter='*H8_KV2_D64_B16:*H8_KV2_D128_B32:CudaAttentionErrorsTest.*'
  else
    echo "== memcheck: no compute-sanitizer on this machine"
    NOT_RUN+=(memcheck)
  fi
fi

# 3. Serve and generate, then stop with SIGTERM (exit status 0 expected).
serve_check() {  # NAME PORT SERVER_ARGS... -- CLIENT_ARGS...
  local name=$1 port=$2 server_args=()
  shift 2
  while [[ $# -gt 0 && $1 != -- ]]; do server_args+=("$1"); shift; done
  shift
  local cli=(env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve-cli" --target "127.0.0.1:$port")
  env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve" --device "$DEVICE" --host 127.0.0.1 --port "$port" \
    --metrics_port -1 "${server_args[@]}" >"$WORK/$name.server.log" 2>&1 &
  local server=$!
  local ok=0 up=0
  for _ in $(seq 120); do  # up to ~2 min to load, but not a minute longer if it died
    kill -0 "$server" 2>/dev/null || break
    "${cli[@]}" --timeout-s 1 health >/dev/null 2>&1 && up=1 && break
  done
  [[ $up -eq 1 ]] || echo "server not serving: $(tail -n 3 "$WORK/$name.server.log")"
  if [[ $up -eq 1 ]] &&
     "${cli[@]}" info | grep -q "device: \"$DEVICE\"" &&
     "${cli[@]}" --timeout-s 120 generate --json "$@"; then
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
  grep -E "memory|KV cache|CUDA backend|serving|rror" "$WORK/$name.server.log"
  [[ $ok -eq 1 && $server_rc -eq 0 ]]
}
export -f serve_check
if wants serve; then
  step serve_default_model 200 serve_check serve_default_model 50611 -- \
    --prompt "Hello, kvserve! Tell me a story." --max-tokens 64 --seed 7 --temperature 0.8 \
    --top-p 0.9 --ignore-eos
  step serve_fixture 200 serve_check serve_fixture 50612 --model "$ROOT/tests/data/tiny-llama-gqa" \
    --dtype float32 -- --prompt-ids 1,2,3,4,5 --max-tokens 16 --ignore-eos
fi

# 4. A real model size under load, then a cancel storm: afterwards the
#    server must hold no KV block and run no request, and stop cleanly.
metric() {  # PORT NAME -> the value of an unlabelled series of /metrics
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
print(next((l.split()[1] for l in text.splitlines() if l.split(" ")[0] == sys.argv[2]), "missing"))
PY
}
storm_check() {
  local preset=${GPU_CHECK_STORM_PRESET:-llama-3.2-1b}
  local port=50613 mport=50614 model="$SCRATCH/$preset-random" ok=1
  local bench=(env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve-bench" --target "127.0.0.1:$port"
               --progress=false)
  local cli=(env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve-cli" --target "127.0.0.1:$port")
  env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve-mkmodel" --preset "$preset" --dtype bfloat16 \
    --max_position_embeddings 4096 --out "$model" || return 1
  env LD_LIBRARY_PATH="$KV_LD" "$BIN/kvserve" --device "$DEVICE" --model "$model" \
    --host 127.0.0.1 --port "$port" --metrics_port "$mport" >"$WORK/storm.server.log" 2>&1 &
  local server=$!
  "${cli[@]}" --timeout-s 240 health >/dev/null || { echo "server not serving"; kill -KILL $server; return 1; }
  grep -E "memory|KV cache|loaded in" "$WORK/storm.server.log"
  # Concurrent clients, text prompts through the tokenizer.json it came with.
  "${bench[@]}" --concurrency 16 --requests 64 --prompt_kind text --prompt_tokens 128 \
    --output_tokens 64 --metrics_url "http://127.0.0.1:$mport/metrics" \
    --json_out "$WORK/storm_serve.json" || ok=0
  # The storm: 256 long streams, 128 at a time, each cut by a 300 ms deadline
  # (the bench exits 3 when requests fail, as all of these must) ...
  "${bench[@]}" --concurrency 128 --requests 256 --warmup_requests 0 --output_tokens 2000 \
    --timeout_s 0.3 --json_out "$WORK/storm_cut.json"
  python3 - "$WORK/storm_cut.json" <<'PY' || ok=0
import json, sys
level = json.load(open(sys.argv[1]))["levels"][0]
print("storm:", level["completed"], "completed,", level["errors_by_code"])
sys.exit(0 if level["errors_by_code"].get("DEADLINE_EXCEEDED", 0) >= 200 else 1)
PY
  # ... and clients killed mid-stream.
  local pids=() i
  for i in $(seq 8); do
    "${cli[@]}" generate --prompt-ids $((100 + i)),42,43 --max-tokens 3000 --ignore-eos \
      >/dev/null 2>&1 &
    pids+=($!)
  done
  sleep 3
  kill -KILL "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  local used running
  for _ in $(seq 50); do  # the engine frees them at its next steps
    used=$(metric "$mport" kvserve_kv_blocks_used)
    running=$(metric "$mport" kvserve_requests_running)
    [[ $used == 0 && $running == 0 ]] && break
    sleep 0.2
  done
  echo "after the storm: kvserve_kv_blocks_used $used, kvserve_requests_running $running," \
       "peak $(metric "$mport" kvserve_kv_blocks_used_peak) of $(metric "$mport" kvserve_kv_blocks_total)"
  [[ $used == 0 && $running == 0 ]] || ok=0
  kill -TERM "$server"
  wait "$server"
  local rc=$?
  echo "server exit status $rc"
  [[ $ok -eq 1 && $rc -eq 0 ]]
}
export -f metric storm_check
if wants storm; then
  step storm_1b 400 storm_check
  # The checkpoint, whether the step passed, failed or timed out (a killed
  # step never reaches its own cleanup).
  rm -rf "${SCRATCH:?}"/*
fi

# 5. transformers' decode on the same shape (same machine, same run).
if wants hf; then
  if python3 -c "import torch, transformers; assert torch.cuda.is_available()" 2>/dev/null; then
    step hf_decode_bench 550 env PYTHONUNBUFFERED=1 python3 deploy/hf_decode_bench.py \
      --batches 1,32 --static --json "$WORK/hf_decode_bench.json"
  else
    echo "== hf_decode_bench: skipped (no PyTorch with CUDA here)"
  fi
fi

FINISHED=true
write_report
echo "== report: $OUT_DIR/gpu-check.json, logs: $OUT_DIR/gpu-check-logs.tgz" \
  "($([[ $FAILED -eq 0 && ${#NOT_RUN[@]} -eq 0 ]] && echo PASSED || echo FAILED))"
[[ $FAILED -eq 0 && ${#NOT_RUN[@]} -eq 0 ]]
