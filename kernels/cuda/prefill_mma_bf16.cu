// The tensor-core prefill kernels for __nv_bfloat16: head dims 64 and 128, block sizes 16 and 32.
#include "kernels/cuda/prefill_mma.cuh"

namespace kvserve::cuda::prefill_mma {
template absl::Status LaunchForDType<__nv_bfloat16>(const PrefillAttentionParams&, const PrefillMmaPlan&,
                                          float*, int*, DeviceError*, cudaStream_t);
}  // namespace kvserve::cuda::prefill_mma
