// The start-up check of the fast kernels against the reference ones, on the
// GPU that will serve (docs/cuda.md, "Fast kernels and their reference").
//
// The fast kernels were written without a GPU to run them on; a wrong one
// must never serve a token. So before the first step, CudaBackend::Reserve
// runs each fast kernel and its reference on the same random inputs shaped
// like the model's (milliseconds in all) and keeps the fast one only when
// every output row agrees (self_check_util.h, AgreeRows); otherwise the
// reference serves, an error is logged and the fallback is reported (a
// metric). The inputs are built so that the kernels' likely bugs show:
// cache slots past every context and spare blocks hold NaN (a read past the
// context poisons the row), split workspaces are poisoned before each run
// (a merge reading a stale or missing partial gets NaN), merge counters are
// read back as zero after each run (graph replays depend on it), and the
// single-split and split paths both run.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "kernels/cuda/device_error.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {

/// What the checks need from the backend.
struct SelfCheckDevice {
  cudaStream_t stream = nullptr;
  DeviceError* error = nullptr;  // the backend's device error word
  int num_sms = 1;
  int flash_ctas_per_sm = 4;     // the flash-decode plan's residency (FlashDecodeResidentCtas)
  int* gemv_counter = nullptr;   // the pre-norm GEMV's counter (one int, zero)
};

/// Each returns OK when the fast kernel agrees with the reference on this
/// shape (or does not serve it: nothing to check), FailedPrecondition naming
/// the disagreement (the caller falls back), or another error when the check
/// itself could not run (a CUDA error, a reference reporting an error).
absl::Status SelfCheckFlashDecode(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size);
absl::Status SelfCheckPrefillMma(const SelfCheckDevice& device, DType dtype,
                                 const AttentionShape& shape, int block_size);
absl::Status SelfCheckRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size);
absl::Status SelfCheckGemvSiluMul(const SelfCheckDevice& device, DType dtype);
absl::Status SelfCheckGemvRmsNorm(const SelfCheckDevice& device, DType dtype, int hidden_size);
absl::Status SelfCheckRopeKvWrite(const SelfCheckDevice& device, DType dtype,
                                  const AttentionShape& shape, int block_size);

}  // namespace kvserve::cuda
