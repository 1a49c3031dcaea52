#!/usr/bin/env bash
# Structured outputs under load: what a JSON-Schema constraint costs the
# requests that carry it, and whether it slows the unconstrained requests
# batched with them. One kvserve; two kvserve-bench processes run side by
# side against it, each at concurrency C, for D seconds:
#
#   A: unconstrained (the neighbours)           B: the requests under test
#   run 1:  A + B constrained by SCHEMA (B ends where the schema is complete)
#   run 2:  A + B unconstrained, B's outputs as long as run 1's on average
#
# Printed: B's ITL constrained / unconstrained (the per-token overhead of
# constrained decoding) and A's ITL in run 1 / run 2 (the neighbours'
# slowdown; the goal is within 5%). Both runs have the same batch size and
# the same mix of prefill and decode, so the ratios isolate the constraint.
#
#   tools/bench-constrained.sh MODEL SCHEMA.json [CONCURRENCY=4] [SECONDS=40] [BUILD=build]
set -euo pipefail
MODEL=${1:?usage: bench-constrained.sh MODEL SCHEMA.json [CONCURRENCY] [SECONDS] [BUILD]}
SCHEMA=${2:?usage: bench-constrained.sh MODEL SCHEMA.json [CONCURRENCY] [SECONDS] [BUILD]}
C=${3:-4}
D=${4:-40}
BUILD=${5:-build}
PORT=${PORT:-50391}
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BUILD/server/kvserve" "$MODEL" --port "$PORT" --http_port 0 --metrics_port 0 \
  --max_num_seqs $((2 * C)) > "$WORK/server.log" 2>&1 &
SERVER=$!

bench() {  # NAME ARGS...
  local name=$1
  shift
  "$BUILD/client/kvserve-bench" --target "localhost:$PORT" --concurrency "$C" \
    --duration_s "$D" --prompt_kind text --prompt_tokens 64 --temperature 0.8 --progress=false \
    --json_out "$WORK/$name.json" "$@" > "$WORK/$name.txt"
}
field() {  # FILE JQ-LIKE-PATH (python: the first level's value)
  python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["levels"][0]
for k in sys.argv[2].split("."): l=l[k]
print(l)' "$1" "$2"
}

echo "== run 1: A unconstrained + B constrained by $SCHEMA (concurrency $C each, ${D}s)"
bench a1 --output_tokens 64 --seed 1 &
A=$!
bench b1 --json_schema "$SCHEMA" --output_tokens 512 --seed 2
wait $A
B_TOKENS=$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["levels"][0]
print(max(1, round(l["output_tokens"] / max(1, l["completed"]))))' "$WORK/b1.json")
echo "== run 2: A + B unconstrained, B's outputs fixed at run 1's mean of $B_TOKENS tokens"
bench a2 --output_tokens 64 --seed 1 &
A=$!
bench b2 --output_tokens "$B_TOKENS" --seed 2
wait $A

python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
lv = {n: json.load(open(f"{w}/{n}.json"))["levels"][0] for n in ("a1", "b1", "a2", "b2")}
def itl(n, q): return lv[n]["itl_ms"][q]
print(f"{'':34} {'ITL p50 ms':>11} {'ITL mean ms':>12} {'completed':>10} {'failed':>7}")
for n, label in (("b1", "B constrained"), ("b2", "B unconstrained"),
                 ("a1", "A beside constrained B"), ("a2", "A beside unconstrained B")):
    print(f"{label:34} {itl(n, 'p50'):11.2f} {itl(n, 'mean'):12.2f} {lv[n]['completed']:10d} "
          f"{lv[n]['failed']:7d}")
print(f"constrained decoding, per-token ITL ratio B1/B2:  p50 {itl('b1','p50')/itl('b2','p50'):.3f}"
      f"  mean {itl('b1','mean')/itl('b2','mean'):.3f}")
print(f"unconstrained neighbours, ITL ratio A1/A2:        p50 {itl('a1','p50')/itl('a2','p50'):.3f}"
      f"  mean {itl('a1','mean')/itl('a2','mean'):.3f}  (goal <= 1.05)")
PY
