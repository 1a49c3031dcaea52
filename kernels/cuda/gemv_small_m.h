// out = x · Wᵀ (+ bias) for a few rows of x (decode steps of up to 8
// sequences), bf16/f16, written for the memory bound: every weight is read
// once, as 16-byte vectors, with many loads in flight per warp.
//
// At M = 1..8 a GEMM is a matrix-vector product: the weight is the whole
// cost, and cuBLASLt's tile kernels leave most SMs idle on the narrow QKV
// and O projections (50% and 38% of the bandwidth on the first H100 run).
// Here a CTA of 256 threads owns 8 rows of W (4 at M > 4) and splits K over
// its threads: each thread loads its 16-byte vectors of every row and of
// every x row before any multiply, and the float32 partial sums are reduced
// over the warp, then over the CTA. The x rows are re-read by every CTA,
// from L2: they are tiny.
//
// The down projection's variant takes the MLP's gate_up = [gate | up] and
// computes silu(gate) · up as it loads x (rounded to the dtype as SiluMul
// would store it): one launch and one pass fewer per layer.
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

/// Whether the fused variant serves silu(gate) · up · Wᵀ for gate_up [M, 2K]
/// ([gate | up] per row) and W [N, K]: GemvSmallMServes of the activation.
bool GemvSiluMulServes(Tensor gate_up, Tensor weight, Tensor bias, Tensor out);

/// Enqueues out = (silu(gate) · up) · Wᵀ (+ bias) (GemvSiluMulServes must hold).
absl::Status LaunchGemvSiluMul(Tensor gate_up, Tensor weight, Tensor bias, Tensor out,
                               cudaStream_t stream);

/// The pre-norm variant: rows and elements it takes. Every CTA reads the
/// residual and delta rows from L2 and keeps their sum in shared memory: at
/// 2 rows that is half the L2 traffic of the CTA's 8 weight rows (K·2 bytes
/// each), at 4 rows as much again, which tuning has not timed, so it stops
/// at 2 (decode at batch 1 and 2, where the saved launch counts most).
inline constexpr int kGemvRmsNormMaxRows = 2;
inline constexpr int64_t kGemvRmsNormMaxElems = 16384;  // rows · K: 32 KiB of bf16

/// Whether the pre-norm variant serves residual [M ≤ 2, K] (+= delta [M, K]
/// or empty), norm_weight [K], then · Wᵀ: GemvSmallMServes of the normed x,
/// M · K ≤ kGemvRmsNormMaxElems, all of one 16-bit dtype, 16-byte aligned.
bool GemvRmsNormServes(Tensor residual, Tensor delta, Tensor norm_weight, Tensor weight,
                       Tensor bias, Tensor out);

/// Enqueues residual += delta (when given); out = (RmsNorm(residual) ·
/// norm_weight) · Wᵀ (+ bias), the normed rows never stored. `counter`: one
/// int, zero, left zero (needed when delta is given). GemvRmsNormServes must hold.
absl::Status LaunchGemvRmsNorm(Tensor residual, Tensor delta, Tensor norm_weight, float eps,
                               int* counter, Tensor weight, Tensor bias, Tensor out,
                               cudaStream_t stream);

}  // namespace kvserve::cuda
