#!/usr/bin/env bash
# One lent GPU session's measurements in the fewest calls (the device tool
# gives a session 15 minutes in all, a machine's start included, and brings
# back at most 8 files): see docs/performance.md, "The check itself".
#
#   deploy/gpu-session.sh 1 [BUNDLE (.gpu/bundle.tar.xz)]   # first call, ~9 minutes
#   deploy/gpu-session.sh 2 [BUNDLE]                        # second, while warm, ~2 minutes
#
# Call 1: deploy/gpu-quick-check.sh (the newest kernels proven and timed with
# and without them), then deploy/gpu-check.sh's tests, attention, bench and
# peers, then the per-kernel profile; call 2: memcheck, serve and the storm.
# Each gpu-check.sh run has its own budget and writes its report and logs
# under $OUT/<letter> after every step, so a call cut short keeps what ran.
# Files back: call 1 at most 5, call 2 at most 4.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
CALL=${1:?usage: deploy/gpu-session.sh 1|2 [BUNDLE]}
[[ $CALL == 1 || $CALL == 2 ]] || { echo "deploy/gpu-session.sh: call 1 or 2, not $CALL" >&2; exit 2; }
BUNDLE=${2:-.gpu/bundle.tar.xz}
OUT_ROOT=${OUT:-$PWD/gpu-check-out}
B=$(mktemp -d)
trap 'rm -rf "$B"' EXIT
tar -C "$B" -xf "$BUNDLE" || exit 2
export GPU_CHECK_DEVICE=cuda
case "$CALL" in
  1)
    OUT="$OUT_ROOT" deploy/gpu-quick-check.sh "$BUNDLE"
    OUT="$OUT_ROOT/t" GPU_CHECK_BUDGET_S=${BUDGET_T:-250} deploy/gpu-check.sh "$B" \
      tests,attention,bench,peers
    OUT="$OUT_ROOT/p" GPU_CHECK_BUDGET_S=${BUDGET_P:-150} deploy/gpu-check.sh "$B" profile
    ;;
  2)
    OUT="$OUT_ROOT/m" GPU_CHECK_BUDGET_S=${BUDGET_M:-60} deploy/gpu-check.sh "$B" memcheck,serve
    OUT="$OUT_ROOT/s" GPU_CHECK_BUDGET_S=${BUDGET_S:-90} deploy/gpu-check.sh "$B" storm
    ;;
esac
