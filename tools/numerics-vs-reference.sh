#!/usr/bin/env bash
# kvserve's and llama.cpp's top-2 margins against the exact float64 forward of
# the same GGUF file, teacher-forced (tools/numerics_vs_reference.py). Not part
# of CI: it needs llama.cpp (deploy/build-llamacpp.sh) and ~2 minutes for
# SmolLM2.
#
#   tools/numerics-vs-reference.sh BUILD_DIR GGUF [--tokens N] [--threads N]
#   LLAMACPP_VENV=DIR: a venv whose python imports llama_cpp, numpy and gguf
#   (as for tools/compare-llamacpp.sh, plus `pip install gguf`)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=$1
GGUF=$2
VENV=${LLAMACPP_VENV:-$BUILD_DIR/llamacpp-venv}
PORT=${PORT:-50073}
serve() {  # serve PORT [flags]: a kvserve on GGUF, one sequence at a time
  "$BUILD_DIR"/server/kvserve --model "$GGUF" --port "$1" --host 127.0.0.1 --metrics_port -1 --http_port -1 \
    --max_num_seqs 1 "${@:2}" 2>/dev/null &
}
serve "$PORT"
ROUNDED=$!
serve $((PORT + 1)) --cpu_activations=float32
EXACT=$!
trap 'kill $ROUNDED $EXACT 2>/dev/null || true' EXIT
for p in "$PORT" $((PORT + 1)); do
  "$BUILD_DIR"/client/kvserve-cli --target 127.0.0.1:"$p" --timeout-s 120 health >/dev/null
done
PYTHONPATH="$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" \
  tools/numerics_vs_reference.py --gguf "$GGUF" --target 127.0.0.1:"$PORT" \
  --target_exact 127.0.0.1:$((PORT + 1)) "${@:3}"
