// The tensor-core prefill kernels for __half: head dims 64 and 128, block sizes 16 and 32.
#include "kernels/cuda/prefill_mma.cuh"

namespace kvserve::cuda::prefill_mma {
template absl::Status LaunchForDType<__half>(const PrefillAttentionParams&, const PrefillMmaPlan&,
                                          float*, int*, DeviceError*, cudaStream_t);
}  // namespace kvserve::cuda::prefill_mma
