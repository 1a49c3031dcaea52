// The start-up check of the fast kernels against the reference ones, on the
// GPU that will serve (docs/cuda.md, "Fast kernels and their reference").
//
// The fast kernels were written without a GPU to run them on; a wrong one
// must never serve a token. So before the first step, CudaBackend::Reserve
// runs each fast kernel and its reference on the same random inputs shaped
// like the model's (a few milliseconds in all) and keeps the fast one only
// when they agree within the stated tolerance; otherwise the reference
// serves, an error is logged and the fallback is reported (a metric).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// What the checks need from the backend: its stream, error word and SM count.
struct SelfCheckDevice {
  cudaStream_t stream = nullptr;
  DeviceError* error = nullptr;  // the backend's device error word
  int num_sms = 1;
};

/// The agreement bound of a fast kernel's output with the reference's:
/// |fast − ref| ≤ atol + rtol·|ref| per element, by output dtype. Both
/// accumulate in float32 and round once, so they differ by the order of
/// their sums and by a rounding step of the output type.
struct AgreementBound {
  double atol = 0, rtol = 0;
};
AgreementBound SelfCheckBound(DType dtype);

/// Each returns OK when the fast kernel agrees with the reference on this
/// shape (or does not serve it: nothing to check), FailedPrecondition naming
/// the worst element otherwise, or the CUDA error that stopped the check.
absl::Status SelfCheckFlashDecode(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size);
absl::Status SelfCheckRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size);
absl::Status SelfCheckPrefillMma(const SelfCheckDevice& device, DType dtype,
                                 const AttentionShape& shape, int block_size);
absl::Status SelfCheckRopeKvWrite(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size);

}  // namespace kvserve::cuda
