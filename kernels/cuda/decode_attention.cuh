// The decode attention kernels. DecodeKernel: one CTA per (split of the KV
// length, KV head × chunk of up to 8 of its query heads, sequence); 4 warps,
// each walking its own 32-key tiles of the split (tiles warp, warp + 4, ...)
// with a private online-softmax state for all the CTA's query heads, merged
// across warps in shared memory at the end. The KV head's keys and values
// are read from the paged cache once for all its query heads (GQA).
//
// Per tile: lane j loads key j's row straight from the cache (16-byte
// vectors) and scores it against the group's queries (held in shared
// memory); then lane l accumulates its head dims of P·V, reading each value
// row with one coalesced warp-wide load. Keys past the context are neither
// read nor counted.
//
// With one split the CTA writes the normalized output; otherwise it writes
// its unnormalized partial output and (max, sum) to the workspace, and
// MergeKernel combines the splits of each (sequence, head).
//
// Included by the per-dtype translation units only (decode_attention_*.cu).
#pragma once

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/dispatch.h"

namespace kvserve::cuda {
namespace decode {

using namespace attention;  // NOLINT: the helpers of this kernel family

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * kWarpSize;
inline constexpr int kMaxGroup = 8;                     // query heads per CTA
inline constexpr int kKeysPerPass = kWarps * kWarpSize;  // 128: split_keys is a multiple
inline constexpr int kMaxSplits = 256;
inline constexpr int kMergeThreads = 128;

template <typename T>
struct Args {
  const T* q;                    // [B, H, D]
  T* out;                        // [B, H, D]
  const T* k_cache;              // [num_blocks, block_size, Hkv, D]
  const T* v_cache;              // [num_blocks, block_size, Hkv, D]
  const int32_t* context_lens;   // [B]
  const int32_t* block_tables;   // [B, width]
  float* partial_out;            // [B, H, splits, D] unnormalized (splits > 1 only)
  float* partial_ml;             // [B, H, splits, 2] running max, sum (splits > 1 only)
  int width;
  int num_blocks;
  int num_heads;                 // H
  int num_kv_heads;              // Hkv
  int num_splits;
  int split_keys;                // keys per split, multiple of kKeysPerPass
  int group_chunks;              // ceil(H / Hkv / kMaxGroup)
  float scale;
  DeviceError* error;
};

template <typename T, int kHeadDim, int kBlockSize>
__global__ void __launch_bounds__(kThreads) DecodeKernel(const __grid_constant__ Args<T> a) {
  constexpr int kDpl = kDimsPerLane<kHeadDim>;
  constexpr int kVec = kVec16<T>;
  static_assert(kHeadDimFitsLayout<T, kHeadDim>, "head_dim does not fit the warp layout");
  __shared__ __align__(16) float s_q[kMaxGroup][kHeadDim];
  __shared__ __align__(16) float s_p[kWarps][kMaxGroup][kWarpSize];
  __shared__ float s_m[kWarps][kMaxGroup];
  __shared__ float s_l[kWarps][kMaxGroup];
  __shared__ __align__(16) float s_o[kWarps][kMaxGroup][kHeadDim];
  // Static shared memory cannot be opted in above 48 KiB.
  static_assert(sizeof(s_q) + sizeof(s_p) + sizeof(s_m) + sizeof(s_l) + sizeof(s_o) <= 48 * 1024,
                "decode shared memory above the static limit");

  const int split = blockIdx.x, b = blockIdx.z;
  const int kv_head = blockIdx.y / a.group_chunks;
  const int group = a.num_heads / a.num_kv_heads;
  const int g0 = (blockIdx.y % a.group_chunks) * kMaxGroup;  // first query head of the group
  const int g_count = min(kMaxGroup, group - g0);
  const int head0 = kv_head * group + g0;
  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;

  const int context = a.context_lens[b];
  const bool bad_table = context > a.width * kBlockSize;
  const bool over_bound = context > a.num_splits * a.split_keys;
  if ((bad_table || over_bound) && split == 0 && blockIdx.y == 0 && tid == 0) {
    if (bad_table) {
      ReportDeviceError(a.error, DeviceErrorCode::kBlockTable, context, a.width, kBlockSize);
    } else {
      ReportDeviceError(a.error, DeviceErrorCode::kLaunchBound, b, context,
                        int64_t(a.num_splits) * a.split_keys, 1);
    }
  }
  // A bad sequence gets an empty key range: zeros, and merge inputs that say so.
  const int key_begin = split * a.split_keys;
  const int key_end = (bad_table || over_bound) ? key_begin : min(context, key_begin + a.split_keys);

  for (int c = tid; c < kMaxGroup * (kHeadDim / kVec); c += kThreads) {
    const int g = c / (kHeadDim / kVec), part = c % (kHeadDim / kVec);
    float v[kVec];
    if (g < g_count) {
      LoadVec16(a.q + (int64_t(b) * a.num_heads + head0 + g) * kHeadDim + part * kVec, v);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[e] = 0.f;
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) s_q[g][part * kVec + e] = v[e];
  }
  __syncthreads();

  const BlockTable<kBlockSize> table{a.block_tables + int64_t(b) * a.width, a.num_blocks};
  float m[kMaxGroup], l[kMaxGroup], alpha[kMaxGroup], s[kMaxGroup];
  float acc[kMaxGroup][kDpl];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = NegInf();
    l[g] = 0.f;
#pragma unroll
    for (int c = 0; c < kDpl; ++c) acc[g][c] = 0.f;
  }

  for (int t0 = key_begin + warp * kWarpSize; t0 < key_end; t0 += kKeysPerPass) {
    // Scores: lane ↔ key; the row is read from the cache, 16 bytes at a time.
    const int key = t0 + lane;
    const int slot = key < key_end ? table.Slot(key, a.error) : -1;
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) s[g] = 0.f;
    if (slot >= 0) {
      const T* k_row = a.k_cache + (int64_t(slot) * a.num_kv_heads + kv_head) * kHeadDim;
#pragma unroll
      for (int d = 0; d < kHeadDim; d += kVec) {
        float kf[kVec];
        LoadVec16(k_row + d, kf);
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          if (g >= g_count) break;  // uniform: MHA does 1 head's work, not 8
#pragma unroll
          for (int e = 0; e < kVec; e += 4) {
            const float4 qq = *reinterpret_cast<const float4*>(&s_q[g][d + e]);
            s[g] += qq.x * kf[e] + qq.y * kf[e + 1] + qq.z * kf[e + 2] + qq.w * kf[e + 3];
          }
        }
      }
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) s[g] = (slot >= 0 && g < g_count) ? s[g] * a.scale : NegInf();
    OnlineSoftmaxTile<kMaxGroup>(s, m, l, alpha);
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      s_p[warp][g][lane] = s[g];
#pragma unroll
      for (int c = 0; c < kDpl; ++c) acc[g][c] *= alpha[g];
    }
    __syncwarp();

    // P·V: lane ↔ dims; value row j is one coalesced load across the lanes.
    const int tile_keys = min(kWarpSize, key_end - t0);
#pragma unroll 4
    for (int j = 0; j < tile_keys; ++j) {
      const int slot_j = __shfl_sync(kFullMask, slot, j);
      if (slot_j < 0 || lane >= kDimLanes<kHeadDim>) continue;  // bad block: reported, weight 0
      float v[kDpl];
      LoadFloats(a.v_cache + (int64_t(slot_j) * a.num_kv_heads + kv_head) * kHeadDim + lane * kDpl, v);
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g) {
        if (g >= g_count) break;
        const float p = s_p[warp][g][j];
#pragma unroll
        for (int c = 0; c < kDpl; ++c) acc[g][c] += p * v[c];
      }
    }
    __syncwarp();  // s_p is rewritten by the next tile
  }

  // Merge the 4 warps' states.
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (lane == 0) {
      s_m[warp][g] = m[g];
      s_l[warp][g] = l[g];
    }
    if (lane < kDimLanes<kHeadDim>) {
#pragma unroll
      for (int c = 0; c < kDpl; ++c) s_o[warp][g][lane * kDpl + c] = acc[g][c];
    }
  }
  __syncthreads();
  for (int idx = tid; idx < g_count * kHeadDim; idx += kThreads) {
    const int g = idx / kHeadDim, d = idx % kHeadDim;
    float m_all = NegInf();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, s_m[w][g]);
    float o = 0.f, l_all = 0.f;
    if (m_all != NegInf()) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float weight = expf(s_m[w][g] - m_all);  // 0 for a warp that saw no key
        o += weight * s_o[w][g][d];
        l_all += weight * s_l[w][g];
      }
    }
    const int64_t bh = int64_t(b) * a.num_heads + head0 + g;
    if (a.num_splits == 1) {
      a.out[bh * kHeadDim + d] = FromFloat<T>(l_all > 0.f ? o / l_all : 0.f);
    } else {
      a.partial_out[(bh * a.num_splits + split) * kHeadDim + d] = o;
      if (d == 0) {
        a.partial_ml[(bh * a.num_splits + split) * 2] = m_all;
        a.partial_ml[(bh * a.num_splits + split) * 2 + 1] = l_all;
      }
    }
  }
}

// One CTA per (head, sequence): out = Σ_s e^{m_s − M} o_s / Σ_s e^{m_s − M} l_s.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kMergeThreads)
    MergeKernel(const float* __restrict__ partial_out,  // [B, H, splits, D]
                const float* __restrict__ partial_ml,   // [B, H, splits, 2]
                int num_heads, int num_splits,
                T* __restrict__ out) {                  // [B, H, D]
  __shared__ float s_w[kMaxSplits];
  __shared__ float s_l[kMaxSplits];
  const int64_t bh = int64_t(blockIdx.y) * num_heads + blockIdx.x;
  const float* ml = partial_ml + bh * num_splits * 2;
  for (int s = threadIdx.x; s < num_splits; s += blockDim.x) {
    s_w[s] = ml[2 * s];
    s_l[s] = ml[2 * s + 1];
  }
  __syncthreads();
  float m_all = attention::NegInf();
  for (int s = 0; s < num_splits; ++s) m_all = fmaxf(m_all, s_w[s]);
  __syncthreads();  // everyone has read the maxima before they become weights
  for (int s = threadIdx.x; s < num_splits; s += blockDim.x) {
    s_w[s] = m_all == attention::NegInf() ? 0.f : expf(s_w[s] - m_all);
  }
  __syncthreads();
  float l_all = 0.f;
  for (int s = 0; s < num_splits; ++s) l_all += s_w[s] * s_l[s];
  const float inv = l_all > 0.f ? 1.f / l_all : 0.f;  // no key at all: 0, never NaN
  const float* o = partial_out + bh * num_splits * kHeadDim;
  for (int d = threadIdx.x; d < kHeadDim; d += blockDim.x) {
    float sum = 0.f;
    for (int s = 0; s < num_splits; ++s) sum += s_w[s] * o[s * kHeadDim + d];
    out[bh * kHeadDim + d] = FromFloat<T>(sum * inv);
  }
}

template <typename T, int kHeadDim, int kBlockSize>
absl::Status Launch(const DecodeAttentionParams& p, const DecodePlan& plan, float* workspace,
                    DeviceError* error, cudaStream_t stream) {
  if (p.num_seqs == 0) return absl::OkStatus();
  if (plan.num_splits < 1 || plan.num_splits > kMaxSplits || plan.split_keys % kKeysPerPass != 0 ||
      (plan.num_splits > 1 && workspace == nullptr)) {
    return absl::InternalError("DecodeAttention: inconsistent launch plan");
  }
  Args<T> a;
  a.q = p.q.as<const T>();
  a.out = p.out.as<T>();
  a.k_cache = p.cache.k.as<const T>();
  a.v_cache = p.cache.v.as<const T>();
  a.context_lens = p.context_lens.as<const int32_t>();
  a.block_tables = p.block_tables.as<const int32_t>();
  const int64_t bh = int64_t(p.num_seqs) * p.shape.num_heads;
  a.partial_out = workspace;
  a.partial_ml = workspace == nullptr ? nullptr : workspace + bh * plan.num_splits * kHeadDim;
  a.width = static_cast<int>(p.block_tables.dim(1));
  a.num_blocks = static_cast<int>(p.cache.k.dim(0));
  a.num_heads = p.shape.num_heads;
  a.num_kv_heads = p.shape.num_kv_heads;
  a.num_splits = plan.num_splits;
  a.split_keys = plan.split_keys;
  a.group_chunks = plan.group_chunks;
  a.scale = p.shape.scale;
  a.error = error;
  const dim3 grid(plan.num_splits, p.shape.num_kv_heads * plan.group_chunks, p.num_seqs);
  DecodeKernel<T, kHeadDim, kBlockSize><<<grid, kThreads, 0, stream>>>(a);
  RETURN_IF_LAUNCH_ERROR();
  if (plan.num_splits > 1) {
    const dim3 merge_grid(p.shape.num_heads, p.num_seqs);
    MergeKernel<T, kHeadDim><<<merge_grid, kMergeThreads, 0, stream>>>(
        a.partial_out, a.partial_ml, p.shape.num_heads, plan.num_splits, a.out);
    RETURN_IF_LAUNCH_ERROR();
  }
  return absl::OkStatus();
}

/// All served head dims and block sizes for one dtype.
template <typename T>
absl::Status LaunchForDType(const DecodeAttentionParams& p, const DecodePlan& plan,
                            float* workspace, DeviceError* error, cudaStream_t stream) {
  return DispatchHeadDim(p.shape.head_dim, [&](auto d) {
    return DispatchBlockSize(p.cache.block_size, [&](auto bs) {
      return Launch<T, decltype(d)::value, decltype(bs)::value>(p, plan, workspace, error, stream);
    });
  });
}

}  // namespace decode
}  // namespace kvserve::cuda
