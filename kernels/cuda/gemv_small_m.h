// out = x · Wᵀ (+ bias) for a few rows of x (decode steps of up to 8
// sequences), bf16/f16, written for the memory bound: every weight is read
// once, as 16-byte vectors, with many loads in flight per warp.
//
// At M = 1..8 a GEMM is a matrix-vector product: the weight is the whole
// cost, and cuBLASLt's tile kernels leave most SMs idle on the narrow QKV
// and O projections (50% and 38% of the bandwidth on the first H100 run).
// Here each warp owns kRowsPerWarp rows of W and walks K in chunks of 256
// elements (32 lanes × 8), loading its rows' vectors and the matching
// vectors of every x row before any multiply; float32 accumulators are
// reduced across the warp at the end. The x rows are re-read by every warp,
// from L1/L2: they are tiny.
//
// It competes with cuBLASLt's candidates when CublasLtGemm tunes a decode
// bucket on the GPU (and is checked against them there first); it is never
// chosen blind.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

/// The largest row count the kernel takes.
inline constexpr int kGemvMaxRows = 8;

/// Whether the kernel serves this product: x [M ≤ 8, K] and W [N, K] of the
/// same 16-bit dtype, K a multiple of 8, 16-byte aligned rows and pointers;
/// out [M, N] of x's dtype or float32; bias empty or [N] of out's dtype.
bool GemvSmallMServes(Tensor x, Tensor weight, Tensor bias, Tensor out);

/// Enqueues the product (GemvSmallMServes must hold).
absl::Status LaunchGemvSmallM(Tensor x, Tensor weight, Tensor bias, Tensor out,
                              cudaStream_t stream);

}  // namespace kvserve::cuda
