// y = x · Wᵀ for W in a ggml block format, with x already rounded to int8
// blocks (quantized_activations.h): exact integer dot products, scaled in
// float32 per group of 16 codes. The weights are read as stored (a GGUF
// file's mapped bytes): unpacked in registers for decode batches, or
// transposed 16 (AVX-512) / 8 (AVX2) rows of W at a time into a panel used
// by every row of x (docs/quantized_weights.md).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kernels/quant/quantized_activations.h"

namespace kvserve {

/// The instruction set the product runs with on this CPU, chosen once:
/// "avx512vnni", "avx2" or "scalar".
const char* QuantProductIsa();

/// y[r, j] = Σ_i x[r, i] · w[j, i] for every row r of `a` and n_begin <= j <
/// n_end, where x is `a`'s rounded rows and w rows of `a.weight_dtype` blocks
/// (row j at weights + j · DTypeBytes(dtype, a.k)). One thread's share.
void QuantProduct(const QuantizedActivations& a, const void* weights, int n_begin, int n_end,
                  float* y, int64_t ldy);

/// For tests: the instruction sets this CPU can run the product with, best
/// first ("scalar" always), and the product with one of them (a name not in
/// the list computes nothing).
std::vector<std::string> QuantProductRunnableIsas();
void QuantProductWithIsa(absl::string_view isa, const QuantizedActivations& a,
                         const void* weights, int n_begin, int n_end, float* y, int64_t ldy);

}  // namespace kvserve
