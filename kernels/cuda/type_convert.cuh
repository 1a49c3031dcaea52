// float32 ↔ storage type conversions used by every kernel (fp32 accumulation),
// and 16-byte vector loads/stores of any storage type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kvserve::cuda {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) { return __float2half(v); }

/// Elements of T in one 16-byte vector.
template <typename T>
inline constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

/// Loads kVec16<T> elements (16 bytes, 16-byte aligned) as floats.
template <typename T>
__device__ __forceinline__ void LoadVec16(const T* src, float* dst) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec16<T>; ++i) dst[i] = ToFloat(e[i]);
}

/// Stores kVec16<T> floats as T (16 bytes, 16-byte aligned).
template <typename T>
__device__ __forceinline__ void StoreVec16(const float* src, T* dst) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec16<T>; ++i) e[i] = FromFloat<T>(src[i]);
  *reinterpret_cast<uint4*>(dst) = raw;
}

}  // namespace kvserve::cuda
