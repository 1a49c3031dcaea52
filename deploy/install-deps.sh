#!/usr/bin/env bash
# Installs the Debian bookworm packages kvserve needs to build, test and run.
# Idempotent: packages already present are skipped, and apt is not touched at
# all when nothing is missing. CUDA is not installed here: it is expected at
# /usr/local/cuda (build machines) or comes with the CUDA base image (Docker).
#
#   deploy/install-deps.sh            build + test packages (default)
#   deploy/install-deps.sh --print    print the package list and exit
#   deploy/install-deps.sh --runtime  print only the run-time libraries (Docker)
set -euo pipefail

# Build toolchain and libraries (DESIGN.md, "Build and dependencies").
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libcpp-httplib-dev  # HTTP client of kvserve-bench and the tests (the server uses Beast)
  prometheus-cpp-dev
  nlohmann-json3-dev
  libpcre2-dev
  libedit-dev
  libicu-dev
  libboost1.81-dev
)
# Tests and tools: the Python client example/test, the load generator's plot,
# and a virtualenv with PyPI's `tokenizers` for the tokenizer differential test.
TEST_PACKAGES=(
  python3 python3-grpcio python3-protobuf python3-venv python3-pip
  gnuplot-nox
  curl openssl
  python3-jinja2
  python3-h2
)
# What the installed server binary links at run time (used by the Dockerfile).
RUNTIME_PACKAGES=(
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libopenblas0-pthread
  libpcre2-8-0 libprometheus-cpp-core1.0 libcpp-httplib0.11 libedit2 libicu72
)

case "${1:-}" in
  --print) echo "${BUILD_PACKAGES[@]} ${TEST_PACKAGES[@]}"; exit 0 ;;
  --runtime) echo "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--print|--runtime]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
