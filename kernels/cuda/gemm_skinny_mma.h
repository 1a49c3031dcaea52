// out = x · Wᵀ (+ bias) for 9-64 rows of x (decode steps of a few dozen
// sequences) on the tensor cores, bf16/f16, written for the memory bound.
//
// At M = 32 a product reads W once and does 32 multiply-adds per weight:
// too many for the CUDA cores at the memory's pace (the small-M GEMV), and
// cuBLASLt's tiles, made for large products, left the narrow projections at
// 28-50% of the bandwidth on the H200 (QKV 8.9 µs, O 7.2 µs, down 16 µs with
// its split-K reduce, at batch 32). Here a CTA of 8 warps owns 16 or 32 rows
// of W and splits K between its warps; each lane loads 16-byte vectors of W
// and of x straight from global memory into mma.sync m16n8k16 fragments (the
// K order inside a fragment is permuted alike in both operands, which leaves
// the dot products unchanged), so there is no shared-memory staging and no
// ldmatrix; the warps' partial sums meet in shared memory at the end, in a
// fixed order (deterministic).
//
// It competes with cuBLASLt's candidates (and the small-M GEMV) when
// CublasLtGemm tunes a bucket of 9-64 rows on the GPU, after agreeing with
// the best candidate on random rows; it is never chosen blind.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

/// The largest row count of x the kernel takes.
inline constexpr int kSkinnyMaxRows = 64;

/// Whether the kernel serves this product with `rows_per_cta` rows of W per
/// CTA (16, or 32 for M ≤ 32): x [M ≤ 64, K] and W [N, K] of the same 16-bit
/// dtype, K a multiple of 32, 16-byte aligned pointers; out [M, N] of x's
/// dtype or float32; bias empty or [N] of out's dtype.
bool SkinnyMmaServes(Tensor x, Tensor weight, Tensor bias, Tensor out, int rows_per_cta);

/// Enqueues the product (SkinnyMmaServes must hold).
absl::Status LaunchSkinnyMma(Tensor x, Tensor weight, Tensor bias, Tensor out, int rows_per_cta,
                             cudaStream_t stream);

}  // namespace kvserve::cuda
