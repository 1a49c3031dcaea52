// RMSNorm (optionally fused with the residual add) on the GPU.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace kvserve::cuda {

/// out = x / rms(x) * weight per row; with `residual` non-empty, first
/// residual += x and normalize the sum. float32 accumulation for every dtype.
absl::Status LaunchRmsNorm(Tensor residual, Tensor x, Tensor weight, float eps, Tensor out,
                           cudaStream_t stream);

}  // namespace kvserve::cuda
