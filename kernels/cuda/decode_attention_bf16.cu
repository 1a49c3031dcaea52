// The decode attention kernels for __nv_bfloat16, every served head dim and block size.
#include "kernels/cuda/decode_attention.cuh"

namespace kvserve::cuda::decode {
template absl::Status LaunchForDType<__nv_bfloat16>(const DecodeAttentionParams&, const DecodePlan&, float*,
                                          DeviceError*, cudaStream_t);
}  // namespace kvserve::cuda::decode
