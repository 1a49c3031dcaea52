#!/usr/bin/env bash
# Installs the packages kvserve needs to build, test and run, on Debian
# bookworm (the tested system) or Ubuntu 24.04 (read from /etc/os-release:
# the few names that differ there). Idempotent: packages already present are
# skipped, and apt is not touched at all when nothing is missing. CUDA is not
# installed here: it is expected at /usr/local/cuda (build machines) or comes
# from PyPI wheels in the Dockerfile.
#
#   deploy/install-deps.sh            build + test packages (default)
#   deploy/install-deps.sh --build    build packages only (the Dockerfile's build stage)
#   deploy/install-deps.sh --print    print the package list and exit
#   deploy/install-deps.sh --runtime  print only the run-time libraries
set -euo pipefail

# ID and VERSION_ID of the system (os-release(5)); Debian when unreadable.
OS_ID=debian
OS_VERSION_ID=12
OS_RELEASE=${OS_RELEASE:-/etc/os-release}  # overridable for the test of this mapping
if [ -r "$OS_RELEASE" ]; then
  OS_ID=$(. "$OS_RELEASE" && echo "${ID:-debian}")
  OS_VERSION_ID=$(. "$OS_RELEASE" && echo "${VERSION_ID:-}")
fi
UBUNTU_2404=0
if [ "$OS_ID" = ubuntu ] && [ "$OS_VERSION_ID" = 24.04 ]; then UBUNTU_2404=1; fi

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
  python3 python3-pip ca-certificates  # CMake's Python3, and pip for the CUDA wheels (Docker)
)
# Tests and tools: the Python client example/test, the load generator's plot,
# a virtualenv with PyPI's `tokenizers` for the tokenizer differential test,
# clang with its runtimes (libFuzzer, ASan) for deploy/run-fuzz.sh, and the
# Go, Java and Ruby example clients (client/go, java, ruby; docs/clients.md):
# Debian's gRPC runtimes and stub generators, built offline.
TEST_PACKAGES=(
  python3 python3-grpcio python3-protobuf python3-venv python3-pip
  gnuplot-nox
  curl openssl
  python3-jinja2
  python3-h2
  python3-jsonschema  # tests/grammar_schema_test.py
  clang libclang-rt-dev
  # Go: GOPATH mode on /usr/share/gocode. grpc-go accepts golang/protobuf 1.3
  # or 1.5; only 1.5 marshals protoc-gen-go's messages, so it is named here.
  golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev golang-google-protobuf-dev
  golang-github-golang-protobuf-1-5-dev
  # Java: javac against the jars in /usr/share/java (no Maven); the
  # annotation jar only for the generated code's @Generated; netty-tcnative
  # (OpenSSL) for TLS, as Debian's netty has no JDK ALPN.
  default-jdk-headless protobuf-compiler-grpc-java-plugin libgrpc-java libprotobuf-java
  libguava-java libnetty-java libperfmark-java libgeronimo-annotation-1.3-spec-java
  libnetty-tcnative-java libnetty-tcnative-jni
  # Ruby (grpc_ruby_plugin comes with protobuf-compiler-grpc, above).
  ruby ruby-grpc ruby-google-protobuf
)
# What the installed server binary links at run time. The Dockerfile does not
# use this list: it copies the linked libraries (deploy/collect-libs.sh).
RUNTIME_PACKAGES=(
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libopenblas0-pthread
  libpcre2-8-0 libprometheus-cpp-core1.0 libcpp-httplib0.11 libedit2 libicu72
)

# Ubuntu 24.04 (noble) packages Boost 1.74 and 1.83, not 1.81, and renamed the
# libraries that changed ABI for 64-bit time_t (the t64 suffix). Not tested
# here (no Ubuntu mirror is reachable from the build machines).
if [ "$UBUNTU_2404" = 1 ]; then
  BUILD_PACKAGES=("${BUILD_PACKAGES[@]/#libboost1.81-dev/libboost1.83-dev}")
  RUNTIME_PACKAGES=(
    libgrpc++1.51t64 libgrpc29t64 libprotobuf32t64 libabsl20220623t64 libopenblas0-pthread
    libpcre2-8-0 libprometheus-cpp-core1.0 libcpp-httplib0.14t64 libedit2 libicu74
  )
fi

WANTED=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
case "${1:-}" in
  --print) echo "${WANTED[@]}"; exit 0 ;;
  --runtime) echo "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
  --build) WANTED=("${BUILD_PACKAGES[@]}") ;;
  "") ;;
  *) echo "usage: $0 [--build|--print|--runtime]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${WANTED[@]}"; do
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
