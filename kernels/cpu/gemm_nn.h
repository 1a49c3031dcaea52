// C = A · B for float32 row-major A [m, k] and B [k, n] (no transposes), one
// thread: the prefill attention's two products per chunk of queries, S = Q ·
// Kᵀ (B = Kᵀ of the head, gathered once) and O = P · V (B = V). Their inner
// dimension is the head dim (64, 128) or the keys, their outputs a few dozen
// rows: too small for OpenBLAS to pay off, and Debian's OpenBLAS runs its
// SSE3 kernels on CPUs it does not know (Sapphire Rapids). The small-M
// product (gemm_small_m.h) wants Bᵀ and ends each output in a horizontal
// sum, which at k = 64 costs more than the multiply-adds; here each row of B
// is multiplied by one broadcast element of A into whole vectors of C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvserve::cpu {

/// c[r, j] = Σ_i a[r, i] · b[i, j] for r < m, j < n (float32 accumulation,
/// in order of i); a: row stride lda, b: ldb, c: ldc (overwritten).
void ProductNN(const float* a, int64_t lda, const float* b, int64_t ldb, int m, int k, int n,
               float* c, int64_t ldc);

/// For tests: the instruction sets this CPU runs ProductNN with, best first
/// ("portable" always), and the product with one of them.
std::vector<std::string> ProductNNRunnableIsas();
void ProductNNWithIsa(absl::string_view isa, const float* a, int64_t lda, const float* b,
                      int64_t ldb, int m, int k, int n, float* c, int64_t ldc);

}  // namespace kvserve::cpu
