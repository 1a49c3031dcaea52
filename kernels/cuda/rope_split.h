// Splits the fused QKV projection and rotates Q and K (Hugging Face Llama's
// rotate-half convention) on the GPU. See RopeSplitParams for shapes.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// Positions outside the cos/sin table are reported through `error` and
/// their token's outputs zero-filled.
absl::Status LaunchRopeSplit(const RopeSplitParams& p, DeviceError* error, cudaStream_t stream);

}  // namespace kvserve::cuda
