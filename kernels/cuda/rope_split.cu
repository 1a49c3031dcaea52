#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dtype_dispatch.cuh"
#include "kernels/cuda/kv_cache_write.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/rope_split.h"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 128;

// The reference: one block per token. Work items: (H + Hkv) * D/2 rotated
// pairs, then Hkv * D copied value elements. The cache, when wanted, is
// written afterwards by LaunchKvCacheWrite.
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

// The fast path: the rotation, the split and the KV-cache write in one pass.
// Grid (tokens, item blocks): one thread per pair (j, j + D/2) of one head,
// Q heads, then K heads, then V heads, so a token's 48 heads (Llama 3.2 1B)
// spread over 12 CTAs instead of looping in one, and a decode step of one
// token costs one short launch. K and V pairs also go to the cache slot;
// the values are the ones k_out and v_out get, so the cache holds exactly
// what the reference writes.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    RopeSplitKvWriteKernel(const T* __restrict__ qkv,             // [T, (H + 2*Hkv) * D]
                           const int32_t* __restrict__ positions,  // [T]
                           const float* __restrict__ cos_sin,      // [max_pos, D] cos | sin
                           int64_t max_pos, int heads, int kv_heads, int dim,
                           T* __restrict__ q_out,                  // [T, H, D]
                           T* __restrict__ k_out,                  // [T, Hkv, D]
                           T* __restrict__ v_out,                  // [T, Hkv, D]
                           const int32_t* __restrict__ slots,      // [T] or null: no cache write
                           int64_t num_slots,
                           T* __restrict__ k_cache,                // [num_slots, Hkv, D]
                           T* __restrict__ v_cache,                // [num_slots, Hkv, D]
                           DeviceError* error) {
  AllowDependents();
  const int64_t t = blockIdx.x;
  const int half = dim / 2;
  const int i = blockIdx.y * kThreads + threadIdx.x;
  // Before the wait, what no kernel of the step writes (pdl.cuh): the
  // positions and slots the host uploaded ahead of the step's first kernel,
  // and the rotation's cos/sin table (written once, at start-up). Their two
  // dependent round trips then overlap the QKV projection's tail.
  const int32_t pos = positions[t];
  const bool valid = pos >= 0 && pos < max_pos;
  const int32_t slot = slots != nullptr ? slots[t] : kPadSlot;
  const bool slot_ok = slot >= 0 && slot < num_slots;
  const bool active = i < (heads + 2 * kv_heads) * half;
  const int h = active ? i / half : 0, j = i - h * half;
  float c = 1.f, s = 0.f;
  if (active && valid && h < heads + kv_heads) {
    const float* cs = cos_sin + int64_t(pos) * dim;
    c = cs[j];
    s = cs[half + j];
  }
  WaitForPrimary();  // below: the projection's output, and every write
  if (blockIdx.y == 0 && threadIdx.x == 0) {
    if (!valid) ReportDeviceError(error, DeviceErrorCode::kRopePosition, pos, max_pos);
    if (slot != kPadSlot && !slot_ok) {
      ReportDeviceError(error, DeviceErrorCode::kKvSlot, slot, num_slots);
    }
  }
  if (!active) return;
  const T* src = qkv + (t * (heads + 2 * kv_heads) + h) * dim;
  float lo, hi;  // the pair's outputs
  if (!valid) {
    lo = hi = 0.f;
  } else if (h < heads + kv_heads) {
    const float x1 = ToFloat(src[j]), x2 = ToFloat(src[j + half]);
    lo = x1 * c - x2 * s;
    hi = x2 * c + x1 * s;
  } else {
    lo = ToFloat(src[j]);
    hi = ToFloat(src[j + half]);
  }
  const T out_lo = FromFloat<T>(lo), out_hi = FromFloat<T>(hi);
  if (h < heads) {
    T* dst = q_out + (t * heads + h) * dim;
    dst[j] = out_lo;
    dst[j + half] = out_hi;
    return;
  }
  const bool is_k = h < heads + kv_heads;
  const int kvh = is_k ? h - heads : h - heads - kv_heads;
  T* dst = (is_k ? k_out : v_out) + (t * kv_heads + kvh) * dim;
  dst[j] = out_lo;
  dst[j + half] = out_hi;
  if (slot_ok) {
    T* cached = (is_k ? k_cache : v_cache) + (int64_t(slot) * kv_heads + kvh) * dim;
    cached[j] = out_lo;
    cached[j + half] = out_hi;
  }
}

}  // namespace

absl::Status LaunchRopeSplit(const RopeSplitParams& p, DeviceError* error, cudaStream_t stream) {
  const int64_t tokens = p.qkv.dim(0);
  if (tokens == 0) return absl::OkStatus();
  RETURN_IF_ERROR(DispatchFloat(p.qkv.dtype, "RopeSplitQkv", [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    RopeSplitKernel<T><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
        p.qkv.as<const T>(), p.positions.as<const int32_t>(), p.cos_sin.as<const float>(),
        p.cos_sin.dim(0), p.shape.num_heads, p.shape.num_kv_heads, p.shape.head_dim,
        p.q_out.as<T>(), p.k_out.as<T>(), p.v_out.as<T>(), error);
    RETURN_IF_LAUNCH_ERROR();
    return absl::OkStatus();
  }));
  if (!p.writes_cache()) return absl::OkStatus();
  return LaunchKvCacheWrite(p.k_out, p.v_out, p.slot_mapping, p.cache, error, stream);
}

absl::Status LaunchRopeSplitKvWrite(const RopeSplitParams& p, DeviceError* error,
                                    cudaStream_t stream) {
  const int64_t tokens = p.qkv.dim(0);
  if (tokens == 0) return absl::OkStatus();
  const int pairs = (p.shape.num_heads + 2 * p.shape.num_kv_heads) * (p.shape.head_dim / 2);
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>((pairs + kThreads - 1) / kThreads));
  const bool cached = p.writes_cache();
  const int64_t num_slots = cached ? p.cache.k.dim(0) * p.cache.block_size : 0;
  return DispatchFloat(p.qkv.dtype, "RopeSplitQkv", [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    RETURN_IF_CUDA_ERROR(LaunchDependent(
        RopeSplitKvWriteKernel<T>, grid, dim3(kThreads), 0, stream, p.qkv.as<const T>(),
        p.positions.as<const int32_t>(), p.cos_sin.as<const float>(), p.cos_sin.dim(0),
        p.shape.num_heads, p.shape.num_kv_heads, p.shape.head_dim, p.q_out.as<T>(),
        p.k_out.as<T>(), p.v_out.as<T>(), cached ? p.slot_mapping.as<const int32_t>() : nullptr,
        num_slots, cached ? p.cache.k.as<T>() : nullptr, cached ? p.cache.v.as<T>() : nullptr,
        error));
    return absl::OkStatus();
  });
}

}  // namespace kvserve::cuda
