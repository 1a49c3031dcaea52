// RMSNorm (optionally fused with the residual add) on the GPU.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

/// out = x / rms(x) * weight per row; with `residual` non-empty, first
/// residual += x and normalize the sum. float32 accumulation for every dtype.
/// The reference: one 256-thread CTA per row, three passes over it.
absl::Status LaunchRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                           cudaStream_t stream);
/// The same results with the row held in registers (one pass; 16-byte
/// vectors). Shapes it cannot hold (a row not a whole number of 16-byte
/// vectors, misaligned, or wider than 1024 vectors: 8192 bf16 values) take the reference.
absl::Status LaunchRmsNormFast(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                               cudaStream_t stream);

}  // namespace kvserve::cuda
