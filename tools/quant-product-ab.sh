#!/usr/bin/env bash
# A/B of the quantized product (kernels/quant/) in one process: REV's
# quant_product.cc (and its .inc files) as A against the working tree's as B,
# run alternately (tests/bench/quant_product_ab.cc says why). Needs a CPU
# build in BUILD_DIR for the rest of the library.
#
#   tools/quant-product-ab.sh [REV] -- FORMAT N K M [ROUNDS] [THREADS] [ISA]
#   BUILD_DIR=build-cpu tools/quant-product-ab.sh HEAD -- q4_k 64 2048 1 300
set -euo pipefail
cd "$(dirname "$0")/.."
rev=HEAD
if [[ $# -gt 0 && $1 != -- ]]; then rev=$1; shift; fi
[[ ${1:-} == -- ]] && shift
build=${BUILD_DIR:-build-cpu}
[[ -f $build/kernels/libkvserve_kernels.a ]] || { echo "no CPU build in $build" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive "$rev" kernels/quant | tar -x -C "$work"
flags=(-O3 -DNDEBUG -std=c++20 -Wno-psabi)
rename() { echo "-DQuantProductWithIsa=QuantProductWithIsa$1 -DQuantProduct=QuantProduct$1" \
  "-DQuantProductIsa=QuantProductIsa$1 -DQuantProductRunnableIsas=QuantProductRunnableIsas$1"; }
# A: REV's sources first on the include path, so its .inc files are the ones found.
# shellcheck disable=SC2046
g++ "${flags[@]}" -I"$work" -I. $(rename A) -c "$work/kernels/quant/quant_product.cc" -o "$work/a.o" &
# shellcheck disable=SC2046
g++ "${flags[@]}" -I. $(rename B) -c kernels/quant/quant_product.cc -o "$work/b.o" &
wait
absl=$(pkg-config --libs absl_strings absl_status absl_statusor absl_str_format absl_synchronization)
# shellcheck disable=SC2086
g++ "${flags[@]}" -I. tests/bench/quant_product_ab.cc tests/quant_test_util.cc "$work/a.o" "$work/b.o" \
  "$build/kernels/libkvserve_kernels.a" "$build/base/libkvserve_base.a" -lopenblas $absl -lpthread \
  -o "$work/quant-product-ab"
"$work/quant-product-ab" "$@"
