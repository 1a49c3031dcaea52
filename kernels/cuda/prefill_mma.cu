// Host side of the tensor-core prefill: which ops it serves, and the dtype
// switch. The kernels are instantiated in prefill_mma_{bf16,f16}.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/prefill_mma.h"
#include "kernels/dtype.h"

namespace kvserve::cuda {
namespace prefill_mma {
template <typename T>
absl::Status LaunchForDType(const PrefillAttentionParams&, DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__nv_bfloat16>(const PrefillAttentionParams&,
                                                           DeviceError*, cudaStream_t);
extern template absl::Status LaunchForDType<__half>(const PrefillAttentionParams&, DeviceError*,
                                                    cudaStream_t);
}  // namespace prefill_mma

bool PrefillMmaServes(const PrefillAttentionParams& p) {
  return (p.q.dtype == DType::kBFloat16 || p.q.dtype == DType::kFloat16) &&
         (p.shape.head_dim == 64 || p.shape.head_dim == 128) &&
         (p.cache.block_size == 16 || p.cache.block_size == 32) && p.shape.num_kv_heads > 0 &&
         p.shape.num_heads % p.shape.num_kv_heads == 0;
}

absl::Status LaunchPrefillMma(const PrefillAttentionParams& p, DeviceError* error,
                              cudaStream_t stream) {
  switch (p.q.dtype) {
    case DType::kBFloat16:
      return prefill_mma::LaunchForDType<__nv_bfloat16>(p, error, stream);
    case DType::kFloat16:
      return prefill_mma::LaunchForDType<__half>(p, error, stream);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PrefillMma: unsupported dtype ", DTypeName(p.q.dtype)));
}

}  // namespace kvserve::cuda
