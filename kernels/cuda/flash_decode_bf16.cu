// The flash-decode kernels for __nv_bfloat16: head dims 64 and 128, block sizes 16 and 32.
#include "kernels/cuda/flash_decode.cuh"

namespace kvserve::cuda::flash_decode {
template absl::Status LaunchForDType<__nv_bfloat16>(const DecodeAttentionParams&, const FlashDecodePlan&,
                                          float*, int*, DeviceError*, cudaStream_t);
template int ResidentCtasForDType<__nv_bfloat16>(int, int, int);
}  // namespace kvserve::cuda::flash_decode
