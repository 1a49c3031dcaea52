#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dtype_dispatch.cuh"
#include "kernels/cuda/rope_split.h"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 128;

// One block per token. Work items: (H + Hkv) * D/2 rotated pairs, then
// Hkv * D copied value elements.
template <typename T>
__global__ void RopeSplitKernel(const T* __restrict__ qkv,          // [T, (H + 2*Hkv) * D]
                                const int32_t* __restrict__ positions,  // [T]
                                const float* __restrict__ cos_sin,   // [max_pos, D] cos | sin
                                int64_t max_pos, int heads, int kv_heads, int dim,
                                T* __restrict__ q_out,               // [T, H, D]
                                T* __restrict__ k_out,               // [T, Hkv, D]
                                T* __restrict__ v_out,               // [T, Hkv, D]
                                DeviceError* error) {
  const int64_t t = blockIdx.x;
  const int half = dim / 2;
  const int rotated = (heads + kv_heads) * half;
  const int items = rotated + kv_heads * dim;
  const int32_t pos = positions[t];
  const bool valid = pos >= 0 && pos < max_pos;
  if (!valid && threadIdx.x == 0) {
    ReportDeviceError(error, DeviceErrorCode::kRopePosition, pos, max_pos);
  }
  const T* row = qkv + t * int64_t(heads + 2 * kv_heads) * dim;
  const float* cs = cos_sin + (valid ? int64_t(pos) * dim : 0);
  for (int i = threadIdx.x; i < items; i += blockDim.x) {
    if (i < rotated) {
      const int h = i / half, j = i - h * half;
      T* dst = h < heads ? q_out + (t * heads + h) * dim : k_out + (t * kv_heads + h - heads) * dim;
      if (!valid) {
        dst[j] = dst[j + half] = FromFloat<T>(0.f);
        continue;
      }
      const float x1 = ToFloat(row[h * dim + j]), x2 = ToFloat(row[h * dim + j + half]);
      const float c = cs[j], s = cs[half + j];
      dst[j] = FromFloat<T>(x1 * c - x2 * s);
      dst[j + half] = FromFloat<T>(x2 * c + x1 * s);
    } else {
      const int e = i - rotated;
      v_out[t * kv_heads * dim + e] = valid ? row[(heads + kv_heads) * dim + e] : FromFloat<T>(0.f);
    }
  }
}

}  // namespace

absl::Status LaunchRopeSplit(const RopeSplitParams& p, DeviceError* error, cudaStream_t stream) {
  const int64_t tokens = p.qkv.dim(0);
  if (tokens == 0) return absl::OkStatus();
  return DispatchFloat(p.qkv.dtype, "RopeSplitQkv", [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    RopeSplitKernel<T><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
        p.qkv.as<const T>(), p.positions.as<const int32_t>(), p.cos_sin.as<const float>(),
        p.cos_sin.dim(0), p.shape.num_heads, p.shape.num_kv_heads, p.shape.head_dim,
        p.q_out.as<T>(), p.k_out.as<T>(), p.v_out.as<T>(), error);
    RETURN_IF_LAUNCH_ERROR();
    return absl::OkStatus();
  });
}

}  // namespace kvserve::cuda
