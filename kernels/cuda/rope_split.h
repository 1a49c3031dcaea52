// Splits the fused QKV projection and rotates Q and K (Hugging Face Llama's
// rotate-half convention) on the GPU. See RopeSplitParams for shapes.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// The reference: one CTA per token, then (with a cache) LaunchKvCacheWrite.
/// Positions outside the cos/sin table are reported through `error` and
/// their token's outputs zero-filled; slots outside the cache are reported
/// and not written.
absl::Status LaunchRopeSplit(const RopeSplitParams& p, DeviceError* error, cudaStream_t stream);

/// The same results in one launch spread over (token, head) pairs, with the
/// cache written in the same pass (docs/cuda.md, "Fused small kernels").
absl::Status LaunchRopeSplitKvWrite(const RopeSplitParams& p, DeviceError* error,
                                    cudaStream_t stream);

}  // namespace kvserve::cuda
