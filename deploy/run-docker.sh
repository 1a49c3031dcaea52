#!/usr/bin/env bash
# The Docker stage that .ci/run leaves out: builds the CPU and CUDA images and
# runs deploy/docker-check.sh --compose (as root, on a machine that reaches
# Debian's mirror and PyPI). Not in CI because a cold build of both images
# takes longer than CI's time left on the 2-core machine (docs/testing.md).
# Arguments go to deploy/docker-check.sh (e.g. --no-cuda).
#
#   deploy/run-docker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run-docker: needs root (dockerd, debootstrap)" >&2; exit 1; }
time deploy/docker-check.sh --compose "$@"
