#!/usr/bin/env bash
# AIPerf (NVIDIA's load tester, PyPI `aiperf`, pinned below) over kvserve's
# OpenAI HTTP API and kvserve-bench over gRPC, against ONE kvserve server, with
# the same prompts (AIPerf's synthetic prompts, replayed by kvserve-bench),
# fixed input/output lengths and fixed concurrencies; prints the side-by-side
# table (docs/bench.md, numbers in docs/performance.md). Not part of CI.
#
#   tools/compare-aiperf.sh [BUILD_DIR] [MODEL]
#   (defaults: build, and SmolLM2-135M-Instruct fetched by tools/fetch-smollm2.sh)
#   Environment: CONCURRENCY ("4 16"), REQUESTS (64), ISL (128), OSL (64),
#   OUT (BUILD_DIR/compare-aiperf), AIPERF_VENV (BUILD_DIR/aiperf-venv),
#   SERVER_CPUS / CLIENT_CPUS (taskset lists, e.g. 1 and 0: the server and the
#   load testers on separate cores, so a load tester's own CPU use cannot
#   slow the server down; unset: no pinning).
#
# Prefix caching is off on the server: the second tool sends the first one's
# prompts, and cached prefixes would make its TTFT unfairly short.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
MODEL=${2:-$(tools/fetch-smollm2.sh)}
CONCURRENCY=${CONCURRENCY:-"4 16"}
REQUESTS=${REQUESTS:-64}
ISL=${ISL:-128}
OSL=${OSL:-64}
OUT=${OUT:-$BUILD_DIR/compare-aiperf}
VENV=${AIPERF_VENV:-$BUILD_DIR/aiperf-venv}
AIPERF_VERSION=0.13.0

if ! [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("aiperf"))' \
          2>/dev/null)" = "$AIPERF_VERSION" ]; then
  echo "== installing aiperf $AIPERF_VERSION into $VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "aiperf==$AIPERF_VERSION"
fi
rm -rf "$OUT" && mkdir -p "$OUT/tokenizer"

# AIPerf builds its prompts with a Hugging Face tokenizer: the very
# tokenizer.json kvserve uses (synthesized from the GGUF's metadata).
if [[ "$MODEL" == *.gguf ]]; then
  "$BUILD_DIR"/tests/kvserve-gguf-tool tokenizer-json "$MODEL" > "$OUT/tokenizer/tokenizer.json"
else
  cp "$MODEL/tokenizer.json" "$OUT/tokenizer/"
fi

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GRPC_PORT=$(free_port); HTTP_PORT=$(free_port); METRICS_PORT=$(free_port)
# taskset execs its command, so $! stays the server's pid (its CPU time is read from /proc).
SERVER_PIN=(); [ -n "${SERVER_CPUS:-}" ] && SERVER_PIN=(taskset -c "$SERVER_CPUS")
CLIENT_PIN=(); [ -n "${CLIENT_CPUS:-}" ] && CLIENT_PIN=(taskset -c "$CLIENT_CPUS")
"${SERVER_PIN[@]}" "$BUILD_DIR"/server/kvserve --model "$MODEL" --host 127.0.0.1 --port "$GRPC_PORT" \
  --http_host 127.0.0.1 --http_port "$HTTP_PORT" --metrics_port "$METRICS_PORT" \
  --enable_prefix_caching=false 2> "$OUT/server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$OUT/server.log"; exit 1; }
  sleep 0.2
done
NAME=$(curl -sf "http://127.0.0.1:$HTTP_PORT/v1/models" |
       /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
echo "== serving $NAME: gRPC :$GRPC_PORT, HTTP :$HTTP_PORT; ISL $ISL, OSL $OSL, $REQUESTS requests"

snap() { /usr/bin/python3 tools/compare_aiperf.py snapshot \
           "http://127.0.0.1:$METRICS_PORT/metrics" "$SERVER" "$OUT/$1.json"; }
# Each tool runs under /usr/bin/time (CPU seconds of it and its children).
timed() {
  local run=$1; shift
  "${CLIENT_PIN[@]}" /usr/bin/time -f "%e %U %S" -o "$OUT/$run.time" "$@"
}

for C in $CONCURRENCY; do
  echo "== concurrency $C: load before AIPerf: $(uptime | sed 's/.*load/load/')" | tee -a "$OUT/load.txt"
  # AIPerf: completions, streamed; exact lengths (ignore_eos, stddev 0);
  # output tokens as the server counts them (usage), like kvserve-bench.
  snap "aiperf-c$C.before"
  timed "aiperf-c$C" "$VENV/bin/aiperf" profile --model "$NAME" --url "http://127.0.0.1:$HTTP_PORT" \
    --endpoint-type completions --streaming --use-legacy-max-tokens \
    --tokenizer "$OUT/tokenizer" --isl "$ISL" --prompt-input-tokens-stddev 0 \
    --osl "$OSL" --prompt-output-tokens-stddev 0 --extra-inputs ignore_eos:true \
    --use-server-token-count --concurrency "$C" --request-count "$REQUESTS" \
    --warmup-request-count "$C" --random-seed 1 --no-server-metrics --ui-type none \
    --output-artifact-dir "$OUT/aiperf-c$C" > "$OUT/aiperf-c$C.log" 2>&1 ||
    { tail -30 "$OUT/aiperf-c$C.log"; exit 1; }
  snap "aiperf-c$C.after"
  INPUTS=$(find "$OUT/aiperf-c$C" -name inputs.json | head -1)
  /usr/bin/python3 tools/compare_aiperf.py prompts "$INPUTS" "$OSL" > "$OUT/prompts-c$C.jsonl"
  echo "== concurrency $C: load before kvserve-bench: $(uptime | sed 's/.*load/load/')" | tee -a "$OUT/load.txt"
  snap "bench-c$C.before"
  timed "bench-c$C" "$BUILD_DIR"/client/kvserve-bench --target "127.0.0.1:$GRPC_PORT" --concurrency "$C" \
    --requests "$REQUESTS" --warmup_requests "$C" --prompts_file "$OUT/prompts-c$C.jsonl" \
    --metrics_url "http://127.0.0.1:$METRICS_PORT/metrics" --progress=false \
    --json_out "$OUT/bench-c$C.json" > "$OUT/bench-c$C.log" 2>&1 ||
    { tail -30 "$OUT/bench-c$C.log"; exit 1; }
  snap "bench-c$C.after"
done
echo "== after: $(uptime | sed 's/.*load/load/')" | tee -a "$OUT/load.txt"
echo
# shellcheck disable=SC2086
/usr/bin/python3 tools/compare_aiperf.py table "$OUT" $CONCURRENCY | tee "$OUT/table.md"
