#!/usr/bin/env bash
# The main job, from a fresh Debian bookworm machine: install the packages,
# build, start the server on the built-in default model, send it a real
# streamed request with kvserve-cli (printing the text, the time to first
# token and tokens/s), then stop the server with SIGTERM.
#
#   deploy/run-demo.sh ["prompt text"]
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPT=${1:-"Hello, kvserve! Tell me a story."}
BUILD_DIR=${BUILD_DIR:-build}
PORT=${PORT:-50051}

deploy/install-deps.sh
deploy/build.sh

"$BUILD_DIR"/server/kvserve --port "$PORT" --host 127.0.0.1 --metrics_port 0 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
"$BUILD_DIR"/client/kvserve-cli --target 127.0.0.1:"$PORT" --timeout-s 60 health >/dev/null
echo "== kvserve-cli generate --prompt \"$PROMPT\" --max-tokens 128 --seed 7 --temperature 0.8"
"$BUILD_DIR"/client/kvserve-cli --target 127.0.0.1:"$PORT" generate \
  --prompt "$PROMPT" --max-tokens 128 --seed 7 --temperature 0.8 --ignore-eos
echo "== (the built-in model has random weights: its text is noise)"
kill -TERM $SERVER
wait $SERVER
trap - EXIT
echo "== server stopped cleanly"
