// The flash-decode kernels for __half: head dims 64 and 128, block sizes 16 and 32.
#include "kernels/cuda/flash_decode.cuh"

namespace kvserve::cuda::flash_decode {
template absl::Status LaunchForDType<__half>(const DecodeAttentionParams&, const FlashDecodePlan&,
                                          float*, int*, DeviceError*, cudaStream_t);
template int ResidentCtasForDType<__half>(int, int, int);
}  // namespace kvserve::cuda::flash_decode
