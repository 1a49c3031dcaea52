// The decode attention kernels for __half, every served head dim and block size.
#include "kernels/cuda/decode_attention.cuh"

namespace kvserve::cuda::decode {
template absl::Status LaunchForDType<__half>(const DecodeAttentionParams&, const DecodePlan&, float*,
                                          DeviceError*, cudaStream_t);
}  // namespace kvserve::cuda::decode
