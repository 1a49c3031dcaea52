// Token selection on the GPU, one CTA per row, following SampleParams' rule
// exactly as kernels/cpu/sample_cpu.cc does (see sample.cu for how).
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

absl::Status LaunchSample(const SampleParams& p, cudaStream_t stream);
/// MaskLogitsParams' rule (mask_logits.cu).
absl::Status LaunchMaskLogits(const MaskLogitsParams& p, cudaStream_t stream);

}  // namespace kvserve::cuda
