// The flash-decode kernel (design in flash_decode.h, warp layout in
// flash_decode_layout.h). Instantiated per dtype in flash_decode_{bf16,f16}.cu.
//
// Scores are kept in base 2 (the query is pre-scaled by 1/√D · log2 e, and
// exp2 replaces exp), which is the same softmax with one multiply fewer per
// score. Masked keys and keys past the split score −∞ and weigh exactly 0; a
// state that has seen no key keeps m = −∞, l = 0 and is never rescaled by
// exp2(−∞ − −∞) = NaN, so a sequence without keys ends as exactly 0.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/flash_decode_layout.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda::flash_decode {

using attention::kFullMask;
using attention::NegInf;
using attention::WarpMax;
using attention::WarpSum;

template <typename T>
struct Args {
  const T* q;                   // [B, H, D]
  T* out;                       // [B, H, D]
  const T* k_cache;             // [num_blocks, BS, Hkv, D]
  const T* v_cache;             // [num_blocks, BS, Hkv, D]
  const int32_t* context_lens;  // [B]
  const int32_t* block_tables;  // [B, width]
  float* partial_out;           // [B, H, splits, D] (splits > 1)
  float* partial_ml;            // [B, H, splits, 2]: max (base 2), sum
  int* counters;                // [B, Hkv · group_chunks], zero between launches
  int width, num_blocks, num_heads, num_kv_heads;
  int num_splits, group_chunks;
  float scale_log2;  // 1/√D · log2(e)
  DeviceError* error;
};

/// The 8 elements of a 16-byte vector of bf16/f16 as floats.
template <typename T>
__device__ __forceinline__ void Unpack8(const uint4& raw, float (&f)[8]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = ToFloat(e[i]);
}

// Residency is what keeps the loads in flight: at most 64 registers (8 CTAs
// per SM) for a group tile of 1 and 128 (4) for 4; a tile of 8 holds twice
// the accumulators and spills under 168, so it keeps what it needs (2).
template <int kGroup>
inline constexpr int kMinCtasPerSm = kGroup == 1 ? 8 : kGroup <= 4 ? 4 : 2;

template <typename T, int kHeadDim, int kBlockSize, int kGroup>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm<kGroup>)
    FlashDecodeKernel(const __grid_constant__ Args<T> a) {
  constexpr Layout L = MakeLayout(sizeof(T), kHeadDim, kBlockSize, kGroup);
  static_assert(L.ok && L.vec == 8, "flash decode serves 2-byte types with a power-of-two row");
  constexpr int kVec = L.vec, kLanesPerKey = L.lanes_per_key, kKeysPerRow = L.keys_per_row;
  constexpr int kRows = L.rows, kTileKeys = L.tile_keys, kPassKeys = L.pass_keys;

  __shared__ float s_m[kWarps][kGroup];
  __shared__ float s_l[kWarps][kGroup];
  __shared__ float s_o[kWarps][kGroup][kHeadDim];
  __shared__ float s_w[kGroup][kMaxSplits];
  __shared__ float s_inv[kGroup];
  __shared__ int s_last;

  AllowDependents();  // the O projection's GEMV may start loading its weights (pdl.cuh)
  const int split = blockIdx.x, b = blockIdx.z;
  const int kv_head = blockIdx.y / a.group_chunks;
  const int group = a.num_heads / a.num_kv_heads;
  const int g0 = (blockIdx.y % a.group_chunks) * kGroup;  // first query head of the tile
  const int g_count = min(kGroup, group - g0);
  const int head0 = kv_head * group + g0;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int part = lane % kLanesPerKey;      // which 16-byte piece of a row this lane reads
  const int key_lane = lane / kLanesPerKey;  // which key of a warp load

  // Before the wait, what no kernel of the step writes (pdl.cuh): the
  // context lengths and block tables the host uploaded ahead of the step's
  // first kernel. The context and the first block id are two dependent
  // round trips that then overlap the previous kernel's tail; the query and
  // the cache (this step's K/V row) are read after it.
  const int context = a.context_lens[b];
  const bool bad_table = context > a.width * kBlockSize;
  // This sequence's keys per split: whole passes, the splits covering its own
  // context. (The launch's split count is planned for the longest context,
  // with CUDA graphs for the longest the block table holds; a short
  // sequence then uses its first few splits, each still a useful size.)
  const int split_keys =
      (max(context, 1) + a.num_splits - 1) / a.num_splits;
  const int rounded_keys = (split_keys + kPassKeys - 1) / kPassKeys * kPassKeys;
  // A bad sequence gets an empty key range: zeros, and merge inputs that say so.
  const int key_begin = split * rounded_keys;
  const int key_end = bad_table ? key_begin : min(context, key_begin + rounded_keys);
  const int32_t* table = a.block_tables + int64_t(b) * a.width;
  int t0 = key_begin + warp * kTileKeys;
  // The next tile's block id is fetched while this tile's rows load.
  int32_t next_block = t0 < key_end ? table[t0 / kBlockSize] : 0;

  WaitForPrimary();  // below: the query, the cache, and every write
  if (bad_table && split == 0 && blockIdx.y == 0 && tid == 0) {
    ReportDeviceError(a.error, DeviceErrorCode::kBlockTable, context, a.width, kBlockSize);
  }

  // This lane's slice of each query head, in base-2 score units.
  float q[kGroup][kVec];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    if (g < g_count) {
      LoadVec16(a.q + (int64_t(b) * a.num_heads + head0 + g) * kHeadDim + part * kVec, q[g]);
#pragma unroll
      for (int e = 0; e < kVec; ++e) q[g][e] *= a.scale_log2;
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) q[g][e] = 0.f;
    }
  }
  float m[kGroup], l[kGroup], acc[kGroup][kVec];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    m[g] = NegInf();
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[g][e] = 0.f;
  }

  const int64_t slot_stride = int64_t(a.num_kv_heads) * kHeadDim;
  const int64_t head_offset = int64_t(kv_head) * kHeadDim + part * kVec;

  for (; t0 < key_end; t0 += kPassKeys) {
    const int32_t block = next_block;
    if (t0 + kPassKeys < key_end) next_block = table[(t0 + kPassKeys) / kBlockSize];
    const bool block_ok = block >= 0 && block < a.num_blocks;
    if (!block_ok && lane == 0) {
      ReportDeviceError(a.error, DeviceErrorCode::kBlockId, block, a.num_blocks);
    }
    // Every load of the tile before any use.
    uint4 k_raw[kRows], v_raw[kRows];
    bool valid[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int key = t0 + r * kKeysPerRow + key_lane;
      valid[r] = block_ok && key < key_end;
      if (valid[r]) {
        const int64_t offset =
            (int64_t(block) * kBlockSize + key % kBlockSize) * slot_stride + head_offset;
        k_raw[r] = __ldg(reinterpret_cast<const uint4*>(a.k_cache + offset));
        v_raw[r] = __ldg(reinterpret_cast<const uint4*>(a.v_cache + offset));
      } else {
        k_raw[r] = make_uint4(0, 0, 0, 0);
        v_raw[r] = make_uint4(0, 0, 0, 0);
      }
    }
    // Scores: a partial dot product per lane, summed over the key's lanes.
    float s[kGroup][kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float kf[kVec];
      Unpack8<T>(k_raw[r], kf);
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < kVec; ++e) dot = fmaf(q[g][e], kf[e], dot);
#pragma unroll
        for (int off = kLanesPerKey / 2; off > 0; off >>= 1) {
          dot += __shfl_xor_sync(kFullMask, dot, off);
        }
        s[g][r] = valid[r] ? dot : NegInf();
      }
    }
    // This lane's online softmax over its keys of the tile: the scores become
    // weights in place, then each value row is unpacked once and added to
    // every head's accumulator (one row of floats live at a time).
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      float tile_max = s[g][0];
#pragma unroll
      for (int r = 1; r < kRows; ++r) tile_max = fmaxf(tile_max, s[g][r]);
      const float m_new = fmaxf(m[g], tile_max);
      // No visible key yet: weights 0, the state stays (m = −∞, l = 0, acc = 0).
      const bool none = m_new == NegInf();
      const float alpha = none ? 1.f : exp2f(m[g] - m_new);  // 0 while m was −∞
      float p_sum = 0.f;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        s[g][r] = none ? 0.f : exp2f(s[g][r] - m_new);  // 0 for masked keys
        p_sum += s[g][r];
      }
      l[g] = l[g] * alpha + p_sum;
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[g][e] *= alpha;
      m[g] = m_new;
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float vf[kVec];
      Unpack8<T>(v_raw[r], vf);
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[g][e] = fmaf(s[g][r], vf[e], acc[g][e]);
      }
    }
  }

  // Merge the lanes that read the same piece of different keys.
#pragma unroll
  for (int off = kLanesPerKey; off < 32; off <<= 1) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const float m_other = __shfl_xor_sync(kFullMask, m[g], off);
      const float l_other = __shfl_xor_sync(kFullMask, l[g], off);
      float acc_other[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc_other[e] = __shfl_xor_sync(kFullMask, acc[g][e], off);
      const float m_new = fmaxf(m[g], m_other);
      if (m_new != NegInf()) {
        const float w_self = exp2f(m[g] - m_new), w_other = exp2f(m_other - m_new);
        l[g] = l[g] * w_self + l_other * w_other;
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[g][e] = acc[g][e] * w_self + acc_other[e] * w_other;
        m[g] = m_new;
      }
    }
  }
  if (key_lane == 0) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) s_o[warp][g][part * kVec + e] = acc[g][e];
      if (part == 0) {
        s_m[warp][g] = m[g];
        s_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();

  // Merge the warps: this split's (unnormalized output, max, sum) per head.
  for (int idx = tid; idx < g_count * kHeadDim; idx += kThreads) {
    const int g = idx / kHeadDim, d = idx % kHeadDim;
    float m_all = NegInf();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, s_m[w][g]);
    float o = 0.f, l_all = 0.f;
    if (m_all != NegInf()) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float weight = exp2f(s_m[w][g] - m_all);  // 0 for a warp that saw no key
        o += weight * s_o[w][g][d];
        l_all += weight * s_l[w][g];
      }
    }
    const int64_t bh = int64_t(b) * a.num_heads + head0 + g;
    if (a.num_splits == 1) {
      a.out[bh * kHeadDim + d] = FromFloat<T>(l_all > 0.f ? o / l_all : 0.f);
    } else {
      const int64_t row = bh * a.num_splits + split;
      a.partial_out[row * kHeadDim + d] = o;
      if (d == 0) {
        a.partial_ml[row * 2] = m_all;
        a.partial_ml[row * 2 + 1] = l_all;
      }
    }
  }
  if (a.num_splits == 1) return;

  // The last CTA of this (sequence, head tile) to finish merges the splits.
  __threadfence();  // this CTA's partials are visible before its count
  __syncthreads();
  int* counter = a.counters + int64_t(b) * gridDim.y + blockIdx.y;
  if (tid == 0) s_last = atomicAdd(counter, 1) == a.num_splits - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();  // and the other CTAs' partials before our reads
  const int num_splits = a.num_splits;
  for (int g = warp; g < g_count; g += kWarps) {
    const float* ml = a.partial_ml + (int64_t(b) * a.num_heads + head0 + g) * num_splits * 2;
    float m_all = NegInf();
    for (int sp = lane; sp < num_splits; sp += 32) m_all = fmaxf(m_all, __ldcg(ml + 2 * sp));
    m_all = WarpMax(m_all);
    float l_all = 0.f;
    for (int sp = lane; sp < num_splits; sp += 32) {
      const float w = m_all == NegInf() ? 0.f : exp2f(__ldcg(ml + 2 * sp) - m_all);
      s_w[g][sp] = w;
      l_all += w * __ldcg(ml + 2 * sp + 1);
    }
    l_all = WarpSum(l_all);
    if (lane == 0) s_inv[g] = l_all > 0.f ? 1.f / l_all : 0.f;  // no key at all: 0, never NaN
  }
  __syncthreads();
  for (int idx = tid; idx < g_count * kHeadDim; idx += kThreads) {
    const int g = idx / kHeadDim, d = idx % kHeadDim;
    const int64_t bh = int64_t(b) * a.num_heads + head0 + g;
    const float* o = a.partial_out + bh * num_splits * kHeadDim + d;
    float sum = 0.f;
    for (int sp = 0; sp < num_splits; ++sp) sum += s_w[g][sp] * __ldcg(o + int64_t(sp) * kHeadDim);
    a.out[bh * kHeadDim + d] = FromFloat<T>(sum * s_inv[g]);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch (and graph replay)
}

template <typename T, int kHeadDim, int kBlockSize>
absl::Status Launch(const DecodeAttentionParams& p, const FlashDecodePlan& plan, float* workspace,
                    int* counters, DeviceError* error, cudaStream_t stream) {
  if (p.num_seqs == 0) return absl::OkStatus();
  const Layout layout = MakeLayout(sizeof(T), kHeadDim, kBlockSize, plan.group_tile);
  const int group = p.shape.num_heads / p.shape.num_kv_heads;
  if (!layout.ok || plan.num_splits < 1 || plan.num_splits > kMaxSplits ||
      plan.split_keys <= 0 || plan.split_keys % layout.pass_keys != 0 ||
      plan.group_chunks * plan.group_tile < group ||
      (plan.num_splits > 1 && (workspace == nullptr || counters == nullptr))) {
    return absl::InternalError("FlashDecode: inconsistent launch plan");
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
  a.counters = counters;
  a.width = static_cast<int>(p.block_tables.dim(1));
  a.num_blocks = static_cast<int>(p.cache.k.dim(0));
  a.num_heads = p.shape.num_heads;
  a.num_kv_heads = p.shape.num_kv_heads;
  a.num_splits = plan.num_splits;
  a.group_chunks = plan.group_chunks;
  a.scale_log2 = p.shape.scale * 1.4426950408889634f;
  a.error = error;
  const dim3 grid(plan.num_splits, p.shape.num_kv_heads * plan.group_chunks, p.num_seqs);
  const dim3 block(kThreads);
  cudaError_t err;
  switch (plan.group_tile) {
    case 1:
      err = LaunchDependent(FlashDecodeKernel<T, kHeadDim, kBlockSize, 1>, grid, block, 0, stream, a);
      break;
    case 4:
      err = LaunchDependent(FlashDecodeKernel<T, kHeadDim, kBlockSize, 4>, grid, block, 0, stream, a);
      break;
    case 8:
      err = LaunchDependent(FlashDecodeKernel<T, kHeadDim, kBlockSize, 8>, grid, block, 0, stream, a);
      break;
    default:
      return absl::InternalError(absl::StrCat("FlashDecode: group tile ", plan.group_tile));
  }
  RETURN_IF_CUDA_ERROR(err);
  return absl::OkStatus();
}

/// CTAs of one instantiation resident per SM (registers and shared memory
/// decide: 8, 4 and 2 for group tiles 1, 4 and 8 with the launch bounds of
/// kMinCtasPerSm), 0 when unknown.
template <typename T, int kHeadDim, int kBlockSize>
int ResidentCtas(int group_tile) {
  int ctas = 0;
  cudaError_t err = cudaErrorInvalidValue;
  switch (group_tile) {
    case 1:
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &ctas, FlashDecodeKernel<T, kHeadDim, kBlockSize, 1>, kThreads, 0);
      break;
    case 4:
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &ctas, FlashDecodeKernel<T, kHeadDim, kBlockSize, 4>, kThreads, 0);
      break;
    case 8:
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &ctas, FlashDecodeKernel<T, kHeadDim, kBlockSize, 8>, kThreads, 0);
      break;
    default: break;
  }
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return 0;
  }
  return ctas;
}

template <typename T>
int ResidentCtasForDType(int head_dim, int block_size, int group_tile) {
  if (head_dim == 64 && block_size == 16) return ResidentCtas<T, 64, 16>(group_tile);
  if (head_dim == 64 && block_size == 32) return ResidentCtas<T, 64, 32>(group_tile);
  if (head_dim == 128 && block_size == 16) return ResidentCtas<T, 128, 16>(group_tile);
  if (head_dim == 128 && block_size == 32) return ResidentCtas<T, 128, 32>(group_tile);
  return 0;
}

/// Head dims 64 and 128 and block sizes 16 and 32 for one dtype.
template <typename T>
absl::Status LaunchForDType(const DecodeAttentionParams& p, const FlashDecodePlan& plan,
                            float* workspace, int* counters, DeviceError* error,
                            cudaStream_t stream) {
  const int d = p.shape.head_dim, bs = p.cache.block_size;
  if (d == 64 && bs == 16) return Launch<T, 64, 16>(p, plan, workspace, counters, error, stream);
  if (d == 64 && bs == 32) return Launch<T, 64, 32>(p, plan, workspace, counters, error, stream);
  if (d == 128 && bs == 16) return Launch<T, 128, 16>(p, plan, workspace, counters, error, stream);
  if (d == 128 && bs == 32) return Launch<T, 128, 32>(p, plan, workspace, counters, error, stream);
  return absl::InvalidArgumentError(absl::StrCat("FlashDecode: head_dim ", d, ", block_size ", bs,
                                                 " not compiled (use the reference kernel)"));
}

}  // namespace kvserve::cuda::flash_decode
