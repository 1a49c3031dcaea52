#!/usr/bin/env bash
# Builds the kvserve images and checks the CPU one from outside the container,
# as a user would, on a machine that reaches Debian's mirror and PyPI and no
# image registry (docs/deploy.md, "Building and checking the images here").
# Run as root from anywhere in the repository:
#
#   deploy/docker-check.sh              CPU + CUDA images, run and check the CPU one
#   deploy/docker-check.sh --compose    also deploy/compose.yaml (kvserve + Prometheus)
#   deploy/docker-check.sh --no-cuda    skip the CUDA image (it cannot run here anyway)
#
# Steps: start dockerd if none answers; make debian:bookworm and
# debian:bookworm-slim with debootstrap if no image has those names; build
# kvserve:cpu (with the SmolLM2 demo model baked in) and kvserve:cuda; run
# kvserve:cpu and check generate, chat, /v1/chat/completions (plain and SSE),
# /metrics, /health, the HEALTHCHECK, `docker stop` (exit 0 within the grace)
# and a wrong --model (fails fast, non-zero). Prints image sizes, build times
# and the answers; exits non-zero on the first failure.
#
# dockerd runs here without the default bridge and without iptables (a
# sandbox has neither); containers go on a user-defined bridge network
# (kvserve-check), which the host reaches by the container's address, with no
# port publishing and no route out: the image must need nothing from outside.
set -euo pipefail
cd "$(dirname "$0")/.."

COMPOSE=0
CUDA=1
for arg in "$@"; do
  case "$arg" in
    --compose) COMPOSE=1 ;;
    --no-cuda) CUDA=0 ;;
    *) echo "usage: $0 [--compose] [--no-cuda]" >&2; exit 2 ;;
  esac
done

STATE=${KVSERVE_DOCKER_STATE:-/tmp/kvserve-docker-check}
mkdir -p "$STATE"
NAME=kvserve-check
step() { printf '\n== %s\n' "$*"; }
fail() { echo "docker-check: FAIL: $*" >&2; exit 1; }

# Debian's docker.io CLI has BuildKit built in; a newer CLI (Docker 23+)
# needs the buildx plugin for it. Use whichever can build with BuildKit.
DOCKER=${DOCKER:-docker}
if ! $DOCKER buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ] &&
   /usr/bin/docker --version | grep -q ' 20\.10\.'; then
  DOCKER=/usr/bin/docker
fi
export DOCKER_BUILDKIT=1

# ---- dockerd: no bridge and no iptables (none available in a sandbox);
# overlay2 (vfs copies every layer: far too slow for these images). Niced,
# so that builds leave the CPU to interactive work first.
if ! $DOCKER info >/dev/null 2>&1; then
  step "starting dockerd (log: $STATE/dockerd.log)"
  command -v dockerd >/dev/null || fail "no dockerd: apt-get install docker.io"
  nice -n 10 dockerd --iptables=false --ip6tables=false --bridge=none \
    --storage-driver=overlay2 >"$STATE/dockerd.log" 2>&1 &
  echo $! >"$STATE/dockerd.pid"
  for _ in $(seq 60); do $DOCKER info >/dev/null 2>&1 && break; sleep 1; done
  $DOCKER info >/dev/null 2>&1 || { tail -20 "$STATE/dockerd.log" >&2; fail "dockerd did not start"; }
fi

# ---- base images: Debian bookworm from the mirror apt uses here.
make_base_images() {
  local site security root
  site=$(apt-get indextargets --format '$(SITE) $(RELEASE)' | awk '$2 == "bookworm" {print $1; exit}')
  security=$(apt-get indextargets --format '$(SITE) $(RELEASE)' |
               awk '$2 == "bookworm-security" {print $1; exit}')
  site=${site:-http://deb.debian.org/debian}
  security=${security:-http://deb.debian.org/debian-security}
  command -v debootstrap >/dev/null || fail "no debootstrap: apt-get install debootstrap"
  root=$(mktemp -d "$STATE/rootfs.XXXXXX")
  step "debootstrap --variant=minbase bookworm from $site"
  debootstrap --variant=minbase bookworm "$root" "$site" >"$STATE/debootstrap.log" 2>&1 ||
    { tail -20 "$STATE/debootstrap.log" >&2; fail "debootstrap"; }
  # The sources the official image has: bookworm, its updates and security.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $site
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log
  tar -C "$root" -c . | $DOCKER import -c 'CMD ["bash"]' - debian:bookworm >/dev/null
  # -slim as the official one is made: no documentation, manual pages or
  # translations, and dpkg told not to install them later.
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
         "$root"/usr/share/locale/* "$root"/usr/share/groff/* "$root"/usr/share/lintian/*
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
  tar -C "$root" -c . | $DOCKER import -c 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
  rm -rf "$root"
}
if ! $DOCKER image inspect debian:bookworm debian:bookworm-slim >/dev/null 2>&1; then
  make_base_images
fi

# ---- builds, timed. The CA bundle goes in as a build secret (pip behind a
# TLS-inspecting proxy needs it), never into a layer.
BUILD_ARGS=(--network host --progress plain)
CA=${KVSERVE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$CA" ] && BUILD_ARGS+=(--secret "id=ca,src=$CA")
declare -A BUILD_S
build() {  # TAG [CONTEXT] [docker build flags]
  local tag=$1 context=.; shift
  if [ $# -gt 0 ] && [ -d "$1" ]; then context=$1; shift; fi
  step "docker build -t $tag $* (log: $STATE/build-${tag//:/-}.log)"
  local start=$SECONDS
  if ! nice -n 10 $DOCKER build "${BUILD_ARGS[@]}" -t "$tag" "$@" "$context" >"$STATE/build-${tag//:/-}.log" 2>&1; then
    tail -40 "$STATE/build-${tag//:/-}.log" >&2
    fail "docker build -t $tag"
  fi
  BUILD_S[$tag]=$((SECONDS - start))
  echo "built $tag in ${BUILD_S[$tag]} s"
}
build kvserve:cpu --build-arg KVSERVE_CUDA=OFF --build-arg WITH_DEMO_MODEL=1
[ "$CUDA" = 1 ] && build kvserve:cuda --build-arg KVSERVE_CUDA=ON

# ---- run the CPU image and check it from the host.
cleanup() { $DOCKER rm -f "$NAME" "$NAME-bad" >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
NET=kvserve-check
$DOCKER network inspect "$NET" >/dev/null 2>&1 || $DOCKER network create "$NET" >/dev/null
step "docker run kvserve:cpu (demo model baked in)"
$DOCKER run -d --name "$NAME" --network "$NET" kvserve:cpu >/dev/null
IP=$($DOCKER inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$NAME")
echo "container $NAME at $IP"
health() { $DOCKER inspect -f '{{.State.Health.Status}}' "$NAME" 2>/dev/null || echo gone; }
# wait_healthy WHAT: up to 120 s for container $NAME to report healthy; its
# log and a failure if it exits or never gets there.
wait_healthy() {
  for _ in $(seq 120); do
    [ "$(health)" = healthy ] && return 0
    [ "$($DOCKER inspect -f '{{.State.Running}}' "$NAME")" = true ] ||
      { $DOCKER logs "$NAME" >&2; fail "$1 exited"; }
    sleep 1
  done
  $DOCKER logs "$NAME" >&2
  fail "$1 not healthy after 120 s: $(health)"
}
wait_healthy "the container"
echo "container: healthy (HEALTHCHECK: kvserve-cli health)"

# The client runs in the image too: the host needs nothing but Docker.
cli() { $DOCKER run --rm --network "$NET" --entrypoint kvserve-cli kvserve:cpu \
          --target "$IP:50051" --timeout_s 60 "$@"; }
step "kvserve-cli generate"
out=$(cli generate --prompt "The capital of France is" --max_tokens 16) || fail "generate"
echo "$out"
[ -n "${out//[[:space:]]/}" ] || fail "generate returned no text"
step "kvserve-cli chat"
out=$(cli chat --message "What is 2+2? Answer in one word." --max_tokens 16) || fail "chat"
echo "$out"
[ -n "${out//[[:space:]]/}" ] || fail "chat returned no text"

step "curl /v1/chat/completions"
model_id() {  # BASE_URL: the id the server lists in /v1/models
  curl -fsS --max-time 10 "$1/v1/models" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])'
}
model=$(model_id "http://$IP:8000") || fail "/v1/models"
echo "model: $model"
body='{"model":"'"$model"'","messages":[{"role":"user","content":"Name a color."}],"max_tokens":12}'
out=$(curl -fsS --max-time 60 -H 'Content-Type: application/json' -d "$body" \
      http://$IP:8000/v1/chat/completions) || fail "chat completion"
echo "$out"
echo "$out" | python3 -c 'import json,sys; m=json.load(sys.stdin)["choices"][0]["message"]; assert m["content"].strip(), m' ||
  fail "chat completion has no content"
step "curl /v1/chat/completions (stream: SSE)"
out=$(curl -fsSN --max-time 60 -H 'Content-Type: application/json' \
      -d "${body%\}},\"stream\":true}" http://$IP:8000/v1/chat/completions) || fail "SSE"
echo "$out" | head -3; echo "... $(echo "$out" | grep -c '^data: ') data lines"
echo "$out" | grep -q '^data: {.*"delta"' || fail "SSE: no delta events"
[ "$(echo "$out" | grep '^data: ' | tail -1)" = "data: [DONE]" ] || fail "SSE: no [DONE]"

step "curl /metrics and /health"
curl -fsS --max-time 10 http://$IP:9464/metrics >"$STATE/metrics.txt" || fail "/metrics"
grep -E '^kvserve_(requests_total|generation_tokens_total)' "$STATE/metrics.txt" | head -4
grep -q '^kvserve_generation_tokens_total' "$STATE/metrics.txt" || fail "/metrics has no kvserve_ counters"
curl -fsS --max-time 10 -o /dev/null -w '/health: %{http_code}\n' http://$IP:8000/health ||
  fail "/health"

step "docker stop (SIGTERM: drain, then exit 0 within the grace)"
start=$SECONDS
$DOCKER stop "$NAME" >/dev/null
took=$((SECONDS - start))
code=$($DOCKER inspect -f '{{.State.ExitCode}}' "$NAME")
echo "stopped in ${took} s, exit code $code"
[ "$code" = 0 ] || { $DOCKER logs --tail 20 "$NAME" >&2; fail "exit code $code after docker stop"; }
[ "$took" -lt 10 ] || fail "docker stop took ${took} s: killed after the 10 s timeout?"

step "a wrong --model fails fast"
start=$SECONDS
set +e
out=$($DOCKER run --name "$NAME-bad" --network "$NET" kvserve:cpu --model=/models/missing.gguf 2>&1)
code=$?
set -e
took=$((SECONDS - start))
echo "$out" | tail -3
echo "exit code $code after ${took} s"
[ "$code" != 0 ] || fail "a missing model exited 0"
[ "$took" -lt 30 ] || fail "a missing model took ${took} s to fail"
echo "$out" | grep -q 'missing.gguf' || fail "the error does not name the path"

# ---- the CUDA image cannot use a GPU here, but it must start: every library
# it links is in it, and --device auto falls back to the CPU without a driver.
if [ "$CUDA" = 1 ]; then
  step "docker run kvserve:cuda (no GPU here: --device auto, built-in model)"
  cleanup
  $DOCKER run -d --name "$NAME" --network "$NET" kvserve:cuda >/dev/null
  wait_healthy kvserve:cuda
  $DOCKER logs "$NAME" 2>&1 | grep -i -m3 -E 'device|cuda|backend' || true
  $DOCKER stop "$NAME" >/dev/null
  code=$($DOCKER inspect -f '{{.State.ExitCode}}' "$NAME")
  $DOCKER rm "$NAME" >/dev/null
  echo "kvserve:cuda: healthy, stopped with exit code $code"
  [ "$code" = 0 ] || fail "kvserve:cuda exit code $code after docker stop"
fi

# ---- deploy/compose.yaml: kvserve (the CPU image) and Prometheus (built from
# Debian's package), on free host ports; Prometheus must scrape kvserve.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
if [ "$COMPOSE" = 1 ]; then
  command -v docker-compose >/dev/null || fail "no docker-compose: apt-get install docker-compose"
  build kvserve-prometheus:2.42 deploy/prometheus
  export KVSERVE_IMAGE=kvserve:cpu KVSERVE_MODEL= KVSERVE_MODELS_DIR="$STATE/models"
  export KVSERVE_GRPC_PORT=$(free_port) KVSERVE_HTTP_PORT=$(free_port)
  export KVSERVE_METRICS_PORT=$(free_port) PROMETHEUS_PORT=$(free_port)
  mkdir -p "$KVSERVE_MODELS_DIR"
  dc() { docker-compose -p kvserve-check -f deploy/compose.yaml "$@"; }
  compose_down() { dc down -v --timeout 40 >/dev/null 2>&1 || true; cleanup; }
  trap compose_down EXIT
  step "docker-compose up (kvserve + prometheus; host ports $KVSERVE_GRPC_PORT, $KVSERVE_HTTP_PORT, $KVSERVE_METRICS_PORT, $PROMETHEUS_PORT)"
  dc up -d --no-build 2>&1 | tail -5
  kv=$(dc ps -q kvserve)
  for _ in $(seq 120); do
    [ "$($DOCKER inspect -f '{{.State.Health.Status}}' "$kv")" = healthy ] && break; sleep 1
  done
  [ "$($DOCKER inspect -f '{{.State.Health.Status}}' "$kv")" = healthy ] ||
    { dc logs --tail 20 >&2; fail "compose: kvserve not healthy"; }
  echo "compose: kvserve healthy"
  model=$(model_id "http://127.0.0.1:$KVSERVE_HTTP_PORT") || fail "compose: /v1/models"
  curl -fsS --max-time 60 -H 'Content-Type: application/json' \
    -d '{"model":"'"$model"'","prompt":"Hello","max_tokens":4}' \
    "http://127.0.0.1:$KVSERVE_HTTP_PORT/v1/completions" >/dev/null ||
    fail "compose: /v1/completions through the published port"
  query="http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query?query=kvserve_generation_tokens_total"
  for _ in $(seq 60); do
    out=$(curl -fsS --max-time 5 "$query" 2>/dev/null || true)
    echo "$out" | grep -q '"result":\[{' && break; sleep 1
  done
  echo "prometheus: $out" | cut -c1-300
  echo "$out" | grep -q '"result":\[{' || { dc logs --tail 20 >&2; fail "compose: Prometheus has no kvserve samples"; }
  step "docker-compose down"
  start=$SECONDS
  dc stop --timeout 40 kvserve >/dev/null 2>&1
  code=$($DOCKER inspect -f '{{.State.ExitCode}}' "$kv")
  echo "kvserve stopped in $((SECONDS - start)) s, exit code $code"
  [ "$code" = 0 ] || fail "compose: kvserve exit code $code"
  compose_down
fi

step "images"
$DOCKER images --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E '^kvserve' || true
for tag in "${!BUILD_S[@]}"; do echo "build time $tag: ${BUILD_S[$tag]} s"; done
echo
echo "docker-check: all checks passed"
