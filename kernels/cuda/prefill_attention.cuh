// The prefill attention kernel (FlashAttention-2 style, on the CUDA cores):
// one CTA per (64-query tile, query head, sequence); 4 warps of 16 query rows
// each. The CTA walks the keys 0..(its last query's position) in 32-key tiles
// staged in shared memory as float32, and keeps a running max / sum / output
// per row (online softmax), so no score matrix is ever materialized: shared
// memory is O(tile · D) whatever the length.
//
// Per tile: lane j scores key j against the warp's 16 rows (Q and K from
// shared memory, the fp32 dot products need no shuffles), masks the future
// with −∞, updates the softmax state, publishes the probabilities in a
// per-warp shared array, then lane l accumulates dims [l·D/32, (l+1)·D/32)
// of P·V. A warp whose rows all precede the tile skips it (causal skipping);
// the CTA stops at its last row's position.
//
// Included by the per-dtype translation units only (prefill_attention_*.cu),
// so that each dtype compiles in parallel.
#pragma once

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/op_params.h"

namespace kvserve::cuda {
namespace prefill {

using namespace attention;  // NOLINT: the helpers of this kernel family

template <typename T>
struct Args {
  const T* q;                    // [T, H, D]
  T* out;                        // [T, H, D]
  const T* k_cache;              // [num_blocks, block_size, Hkv, D]
  const T* v_cache;              // [num_blocks, block_size, Hkv, D]
  const int32_t* cu_seqlens_q;   // [B + 1]
  const int32_t* context_lens;   // [B]
  const int32_t* block_tables;   // [B, width]
  int width;                     // max blocks per sequence (block_tables.dim(1))
  int num_blocks;
  int num_tokens;                // T
  int num_heads;                 // H
  int num_kv_heads;              // Hkv
  int max_q_len;                 // the grid covers this many queries per sequence
  float scale;
  DeviceError* error;
};

template <int kHeadDim>
struct Config {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kRows = 16;                      // query rows per warp
  static constexpr int kQueryTile = kWarps * kRows;     // query rows per CTA
  static constexpr int kKeyTile = kWarpSize;            // keys per tile: one per lane
  // K rows padded by 4 floats: lanes reading their own K row as float4 hit
  // disjoint banks (row stride ≡ 4 words mod 32).
  static constexpr int kKStride = kHeadDim + 4;
  static constexpr int kDpl = kDimsPerLane<kHeadDim>;
  static constexpr int kQFloats = kQueryTile * kHeadDim;
  static constexpr int kKFloats = kKeyTile * kKStride;
  static constexpr int kVFloats = kKeyTile * kHeadDim;
  static constexpr int kPFloats = kWarps * kRows * kKeyTile;
  static constexpr size_t kSmemBytes = sizeof(float) * (kQFloats + kKFloats + kVFloats + kPFloats);
  // Hopper's most dynamic shared memory per block, after the opt-in in Launch.
  static_assert(kSmemBytes <= 227 * 1024, "prefill tile does not fit in shared memory");
};

template <typename T, int kHeadDim, int kBlockSize>
__global__ void __launch_bounds__(Config<kHeadDim>::kThreads)
    PrefillKernel(const __grid_constant__ Args<T> a) {
  using C = Config<kHeadDim>;
  constexpr int kVec = kVec16<T>;
  static_assert(kHeadDimFitsLayout<T, kHeadDim>, "head_dim does not fit the warp layout");
  constexpr int kChunks = kHeadDim / kVec;  // 16-byte chunks per row
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* s_q = smem;                    // [kQueryTile][D]
  float* s_k = s_q + C::kQFloats;       // [kKeyTile][kKStride]
  float* s_v = s_k + C::kKFloats;       // [kKeyTile][D]
  float* s_p = s_v + C::kVFloats;       // [kWarps][kRows][kKeyTile]

  const int b = blockIdx.z, h = blockIdx.y;
  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int q_begin = a.cu_seqlens_q[b];
  const int q_len = a.cu_seqlens_q[b + 1] - q_begin;
  const int context = a.context_lens[b];

  // Metadata checks (the CPU backend's, plus the launch bound); one CTA
  // reports, every CTA of a bad sequence leaves its rows alone.
  const bool bad_queries = q_len < 0 || q_len > context || q_begin < 0 ||
                           a.cu_seqlens_q[b + 1] > a.num_tokens;
  const bool bad_table = context > a.width * kBlockSize;
  const bool over_bound = q_len > a.max_q_len;
  if (bad_queries || bad_table || over_bound) {
    if (blockIdx.x == 0 && h == 0 && tid == 0) {
      if (bad_queries) {
        ReportDeviceError(a.error, DeviceErrorCode::kPrefillQueries, b, q_len, context);
      } else if (bad_table) {
        ReportDeviceError(a.error, DeviceErrorCode::kBlockTable, context, a.width, kBlockSize);
      } else {
        ReportDeviceError(a.error, DeviceErrorCode::kLaunchBound, b, q_len, a.max_q_len, 0);
      }
    }
    return;
  }
  const int row0 = blockIdx.x * C::kQueryTile;  // first query row of this CTA
  if (row0 >= q_len) return;
  const int first_pos = context - q_len;        // position of query row 0
  const int cta_last_row = min(row0 + C::kQueryTile, q_len) - 1;
  const int key_limit = first_pos + cta_last_row + 1;  // keys [0, key_limit) are visible to some row
  const int kv_head = h / (a.num_heads / a.num_kv_heads);
  const BlockTable<kBlockSize> table{a.block_tables + int64_t(b) * a.width, a.num_blocks};

  // Q tile → shared float32; rows past the chunk are zeros (and fully masked).
  for (int c = tid; c < C::kQueryTile * kChunks; c += C::kThreads) {
    const int r = c / kChunks, part = c % kChunks;
    float v[kVec];
    if (row0 + r < q_len) {
      LoadVec16(a.q + (int64_t(q_begin + row0 + r) * a.num_heads + h) * kHeadDim + part * kVec, v);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[e] = 0.f;
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) s_q[r * kHeadDim + part * kVec + e] = v[e];
  }

  const int warp_row0 = row0 + warp * C::kRows;
  const int warp_last_row = min(warp_row0 + C::kRows, q_len) - 1;  // < warp_row0: no rows
  float m[C::kRows], l[C::kRows], alpha[C::kRows], s[C::kRows];
  float acc[C::kRows][C::kDpl];
#pragma unroll
  for (int i = 0; i < C::kRows; ++i) {
    m[i] = NegInf();
    l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < C::kDpl; ++c) acc[i][c] = 0.f;
  }
  float* p_warp = s_p + warp * C::kRows * C::kKeyTile;

  for (int t0 = 0; t0 < key_limit; t0 += C::kKeyTile) {
    __syncthreads();  // the previous tile (and, first time, nothing) is no longer read
    for (int c = tid; c < C::kKeyTile * kChunks; c += C::kThreads) {
      const int j = c / kChunks, part = c % kChunks;
      const int pos = t0 + j;
      float kf[kVec], vf[kVec];
      const int slot = pos < key_limit ? table.Slot(pos, a.error) : -1;
      if (slot >= 0) {
        const int64_t offset = (int64_t(slot) * a.num_kv_heads + kv_head) * kHeadDim + part * kVec;
        LoadVec16(a.k_cache + offset, kf);
        LoadVec16(a.v_cache + offset, vf);
      } else {  // past the last visible key (masked below) or a reported bad block
#pragma unroll
        for (int e = 0; e < kVec; ++e) kf[e] = vf[e] = 0.f;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        s_k[j * C::kKStride + part * kVec + e] = kf[e];
        s_v[j * kHeadDim + part * kVec + e] = vf[e];
      }
    }
    __syncthreads();
    // Causal skipping: the warp's last row sits before this tile's first key.
    if (warp_last_row < warp_row0 || first_pos + warp_last_row < t0) continue;

    // Scores: lane ↔ key.
#pragma unroll
    for (int i = 0; i < C::kRows; ++i) s[i] = 0.f;
    const float* k_row = s_k + lane * C::kKStride;
#pragma unroll 4
    for (int d = 0; d < kHeadDim; d += 4) {
      const float4 kk = *reinterpret_cast<const float4*>(k_row + d);
#pragma unroll
      for (int i = 0; i < C::kRows; ++i) {
        const float4 qq = *reinterpret_cast<const float4*>(s_q + (warp * C::kRows + i) * kHeadDim + d);
        s[i] += qq.x * kk.x + qq.y * kk.y + qq.z * kk.z + qq.w * kk.w;
      }
    }
    const int key_pos = t0 + lane;
#pragma unroll
    for (int i = 0; i < C::kRows; ++i) {
      const int row = warp_row0 + i;
      const bool visible = row < q_len && key_pos <= first_pos + row;
      s[i] = visible ? s[i] * a.scale : NegInf();
    }
    OnlineSoftmaxTile<C::kRows>(s, m, l, alpha);
#pragma unroll
    for (int i = 0; i < C::kRows; ++i) {
      p_warp[i * C::kKeyTile + lane] = s[i];
#pragma unroll
      for (int c = 0; c < C::kDpl; ++c) acc[i][c] *= alpha[i];
    }
    __syncwarp();

    // P·V: lane ↔ dims.
    if (lane < kDimLanes<kHeadDim>) {
#pragma unroll 2
      for (int j = 0; j < C::kKeyTile; j += 4) {
        float v[4][C::kDpl];
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) LoadShared(s_v + (j + jj) * kHeadDim + lane * C::kDpl, v[jj]);
#pragma unroll
        for (int i = 0; i < C::kRows; ++i) {
          const float4 p = *reinterpret_cast<const float4*>(p_warp + i * C::kKeyTile + j);
#pragma unroll
          for (int c = 0; c < C::kDpl; ++c) {
            acc[i][c] += p.x * v[0][c] + p.y * v[1][c] + p.z * v[2][c] + p.w * v[3][c];
          }
        }
      }
    }
    __syncwarp();  // p_warp is rewritten by the next tile
  }

  if (lane >= kDimLanes<kHeadDim>) return;
#pragma unroll
  for (int i = 0; i < C::kRows; ++i) {
    const int row = warp_row0 + i;
    if (row >= q_len) break;
    float o[C::kDpl];
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;  // no visible key: 0, never NaN
#pragma unroll
    for (int c = 0; c < C::kDpl; ++c) o[c] = acc[i][c] * inv;
    StoreFloats(o, a.out + (int64_t(q_begin + row) * a.num_heads + h) * kHeadDim + lane * C::kDpl);
  }
}

template <typename T, int kHeadDim, int kBlockSize>
absl::Status Launch(const PrefillAttentionParams& p, DeviceError* error, cudaStream_t stream) {
  using C = Config<kHeadDim>;
  auto kernel = PrefillKernel<T, kHeadDim, kBlockSize>;
  // Above 48 KiB a kernel must opt in to its dynamic shared memory, once.
  static const cudaError_t opt_in = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmemBytes));
  RETURN_IF_CUDA_ERROR(opt_in);
  const int tokens = static_cast<int>(p.q.dim(0));
  const int max_q = p.max_q_len > 0 ? p.max_q_len : tokens;
  if (tokens == 0 || p.num_seqs == 0 || max_q == 0) return absl::OkStatus();
  Args<T> a;
  a.q = p.q.as<const T>();
  a.out = p.out.as<T>();
  a.k_cache = p.cache.k.as<const T>();
  a.v_cache = p.cache.v.as<const T>();
  a.cu_seqlens_q = p.cu_seqlens_q.as<const int32_t>();
  a.context_lens = p.context_lens.as<const int32_t>();
  a.block_tables = p.block_tables.as<const int32_t>();
  a.width = static_cast<int>(p.block_tables.dim(1));
  a.num_blocks = static_cast<int>(p.cache.k.dim(0));
  a.num_tokens = tokens;
  a.num_heads = p.shape.num_heads;
  a.num_kv_heads = p.shape.num_kv_heads;
  a.max_q_len = max_q;
  a.scale = p.shape.scale;
  a.error = error;
  const dim3 grid((max_q + C::kQueryTile - 1) / C::kQueryTile, p.shape.num_heads, p.num_seqs);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(a);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

/// All served head dims and block sizes for one dtype.
template <typename T>
absl::Status LaunchForDType(const PrefillAttentionParams& p, DeviceError* error,
                            cudaStream_t stream) {
  return DispatchHeadDim(p.shape.head_dim, [&](auto d) {
    return DispatchBlockSize(p.cache.block_size, [&](auto bs) {
      return Launch<T, decltype(d)::value, decltype(bs)::value>(p, error, stream);
    });
  });
}

}  // namespace prefill
}  // namespace kvserve::cuda
