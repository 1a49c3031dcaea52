// Host side of the prefill attention: the dtype switch. The kernels are
// instantiated in prefill_attention_{f32,bf16,f16}.cu.
#include "kernels/cuda/prefill_attention.cuh"
#include "kernels/cuda/prefill_attention.h"

namespace kvserve::cuda {
namespace prefill {
extern template absl::Status LaunchForDType<float>(const PrefillAttentionParams&, DeviceError*,
                                                   cudaStream_t);
extern template absl::Status LaunchForDType<__nv_bfloat16>(const PrefillAttentionParams&,
                                                           DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__half>(const PrefillAttentionParams&, DeviceError*,
                                                    cudaStream_t);
}  // namespace prefill

absl::Status LaunchPrefillAttention(const PrefillAttentionParams& p, DeviceError* error,
                                    cudaStream_t stream) {
  switch (p.q.dtype) {
    case DType::kFloat32:
      return prefill::LaunchForDType<float>(p, error, stream);
    case DType::kBFloat16:
      return prefill::LaunchForDType<__nv_bfloat16>(p, error, stream);
    case DType::kFloat16:
      return prefill::LaunchForDType<__half>(p, error, stream);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PrefillAttention: unsupported dtype ", DTypeName(p.q.dtype)));
}

}  // namespace kvserve::cuda
