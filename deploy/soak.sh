#!/usr/bin/env bash
# Soak test (issue 13 item 11): one kvserve, N minutes of mixed gRPC and HTTP
# traffic (completions, chats, streams, cancellations, deadline expiries,
# malformed requests, disconnects, a burst of HTTP/2 rapid resets), then the
# checks: one terminal status per request and the server's counters agree,
# 0 KV blocks used, RSS within 10% of its value after warm-up, no server
# error line a client did not cause, exit 0 on SIGTERM. Bounded: it stops by
# itself after the N minutes plus at most a few for the checks. Exits 1 if a
# check fails. Details and figures: docs/testing.md.
#
#   deploy/soak.sh [--minutes N (10)] [--workers W (6)] [--json FILE] [-- kvserve flags]
#
# BUILD_DIR (build): where kvserve and the Python stubs are, built here (the
# two targets only) when missing. The server's log goes to
# $BUILD_DIR/soak-server.log.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
PYTHON=/usr/bin/python3  # Debian's: python3-grpcio, python3-h2

if [ ! -x "$BUILD_DIR/server/kvserve" ] || [ ! -d "$BUILD_DIR/python/kvserve" ]; then
  [ -f "$BUILD_DIR/build.ninja" ] || cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD_DIR" --target kvserve kvserve_python_stubs
fi
exec "$PYTHON" tests/soak/soak.py --kvserve "$BUILD_DIR/server/kvserve" \
  --stubs "$BUILD_DIR/python" --chat-template tests/data/chat/chatml_strict.jinja \
  --log "$BUILD_DIR/soak-server.log" "$@"
