// The prefill attention kernel for float, every served head dim and block size.
#include "kernels/cuda/prefill_attention.cuh"

namespace kvserve::cuda::prefill {
template absl::Status LaunchForDType<float>(const PrefillAttentionParams&, DeviceError*,
                                          cudaStream_t);
}  // namespace kvserve::cuda::prefill
