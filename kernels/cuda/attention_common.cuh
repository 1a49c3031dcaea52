// Device helpers shared by the prefill and decode attention kernels: warp
// reductions, the paged-cache row lookup, the online-softmax update, and
// small vector loads.
//
// Both kernels use the same warp layout: for scores, lane j owns key j of a
// 32-key tile (so a dot product needs no cross-lane reduction); for the
// output, lane l owns head dims [l * kDimsPerLane, (l + 1) * kDimsPerLane).
// The probabilities cross from one layout to the other through a per-warp
// shared array.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/device_error.h"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda::attention {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

/// Head dims owned by each lane in the output layout, and how many lanes own
/// any (head_dim 16 leaves half the warp idle there; it only serves tests).
template <int kHeadDim>
inline constexpr int kDimsPerLane = kHeadDim >= kWarpSize ? kHeadDim / kWarpSize : 1;
template <int kHeadDim>
inline constexpr int kDimLanes = kHeadDim / kDimsPerLane<kHeadDim>;

/// What both kernels' per-lane and per-vector loops require of the head dim
/// and storage type T, checked where they are instantiated: the lanes own
/// every dim exactly once (at most 32 lanes, kDimLanes · kDimsPerLane = D:
/// D = 80 would need 40 lanes and lose dims 64..79), rows are whole 16-byte
/// vectors of T, and score loops step 4 floats (float4) at a time.
template <typename T, int kHeadDim>
inline constexpr bool kHeadDimFitsLayout =
    kDimLanes<kHeadDim> <= kWarpSize && kDimLanes<kHeadDim> * kDimsPerLane<kHeadDim> == kHeadDim &&
    kHeadDim % kVec16<T> == 0 && kHeadDim % 4 == 0;

__device__ __forceinline__ float NegInf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

/// One sequence's block table over a paged cache [num_blocks, kBlockSize, Hkv, D].
template <int kBlockSize>
struct BlockTable {
  const int32_t* row;  // [width] this sequence's block ids
  int num_blocks;

  /// The cache slot of token `pos`, or -1 (reported) when its block id is
  /// not a block of the cache. The caller guarantees pos / kBlockSize < width.
  __device__ __forceinline__ int Slot(int pos, DeviceError* error) const {
    const int32_t block = row[pos / kBlockSize];
    if (block < 0 || block >= num_blocks) {
      ReportDeviceError(error, DeviceErrorCode::kBlockId, block, num_blocks);
      return -1;
    }
    return block * kBlockSize + pos % kBlockSize;
  }
};

/// Folds one 32-key tile of scores into the running softmax state of
/// kRows query rows. On entry s[i] is this lane's (scaled) score for row i,
/// −∞ when masked; on return it is the unnormalized probability
/// exp(s − m_new), exactly 0 for masked keys, and alpha[i] is the factor the
/// row's accumulator must be multiplied by. A row that has seen no visible
/// key keeps m = −∞, l = 0 (never exp(−∞ − −∞) = NaN), so it ends as 0.
template <int kRows>
__device__ __forceinline__ void OnlineSoftmaxTile(float (&s)[kRows], float (&m)[kRows],
                                                  float (&l)[kRows], float (&alpha)[kRows]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const float m_new = fmaxf(m[i], WarpMax(s[i]));  // warp-uniform
    if (m_new == NegInf()) {
      alpha[i] = 1.f;
      s[i] = 0.f;
    } else {
      alpha[i] = expf(m[i] - m_new);  // 0 when m[i] = −∞
      s[i] = expf(s[i] - m_new);      // 0 for masked keys
    }
    l[i] = l[i] * alpha[i] + WarpSum(s[i]);
    m[i] = m_new;
  }
}

/// Loads N contiguous elements of T (N * sizeof(T) bytes, aligned to that
/// size when it is 4, 8 or 16) as floats, in one vector load where possible.
template <typename T, int N>
__device__ __forceinline__ void LoadFloats(const T* src, float (&dst)[N]) {
  constexpr int kBytes = N * static_cast<int>(sizeof(T));
  if constexpr (kBytes == 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(e[i]);
  } else if constexpr (kBytes == 8) {
    const uint2 raw = *reinterpret_cast<const uint2*>(src);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(e[i]);
  } else if constexpr (kBytes == 4) {
    const uint32_t raw = *reinterpret_cast<const uint32_t*>(src);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(src[i]);
  }
}

/// Loads N contiguous floats from shared memory (float4/float2 when N allows).
template <int N>
__device__ __forceinline__ void LoadShared(const float* src, float (&dst)[N]) {
  if constexpr (N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
  } else if constexpr (N == 2) {
    const float2 v = *reinterpret_cast<const float2*>(src);
    dst[0] = v.x, dst[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

/// Stores N floats as T (scalar stores: outputs are written once per row).
template <typename T, int N>
__device__ __forceinline__ void StoreFloats(const float (&src)[N], T* dst) {
#pragma unroll
  for (int i = 0; i < N; ++i) dst[i] = FromFloat<T>(src[i]);
}

}  // namespace kvserve::cuda::attention
