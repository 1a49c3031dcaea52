// The tensor-core prefill kernel (design in prefill_mma.h, fragment layouts
// in mma.cuh). Instantiated per dtype in prefill_mma_{bf16,f16}.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/prefill_mma.h"

namespace kvserve::cuda::prefill_mma {

using attention::NegInf;

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kKeyTile = 64;

/// Query rows per CTA (PrefillMmaTileRows, prefill_mma.h): 16-row m-tiles
/// (the mma's M), two per warp.
template <int kHeadDim>
inline constexpr int kRowsPerCta = PrefillMmaTileRows(kHeadDim);
template <int kHeadDim>
inline constexpr int kMTiles = kRowsPerCta<kHeadDim> / (kWarps * 16);
static_assert(kMTiles<64> * kWarps * 16 == kRowsPerCta<64> &&
              kMTiles<128> * kWarps * 16 == kRowsPerCta<128>);

/// Shared memory: the Q tile, then two (K, V) tile pairs. Rows are padded by
/// 16 bytes so that the 8 rows an ldmatrix reads start in 8 different bank
/// groups (unpadded, a 128- or 256-byte row puts them all in one).
template <int kHeadDim>
struct Smem {
  static constexpr int kStride = kHeadDim + 8;  // elements per row
  static constexpr int kQElems = kRowsPerCta<kHeadDim> * kStride;
  static constexpr int kTileElems = kKeyTile * kStride;  // one K or V tile
  static constexpr size_t kBytes = (size_t(kQElems) + size_t(4) * kTileElems) * 2;
  static_assert(kBytes <= 227 * 1024, "prefill tiles do not fit in shared memory");
};

template <typename T>
struct Args {
  const T* q;                   // [T, H, D]
  T* out;                       // [T, H, D]
  const T* k_cache;             // [num_blocks, block_size, Hkv, D]
  const T* v_cache;             // [num_blocks, block_size, Hkv, D]
  const int32_t* cu_seqlens_q;  // [B + 1]
  const int32_t* context_lens;  // [B]
  const int32_t* block_tables;  // [B, width]
  int width, num_blocks, num_tokens, num_heads, num_kv_heads;
  int max_q_len;     // the grid covers this many queries per sequence
  float scale_log2;  // 1/√D · log2(e)
  DeviceError* error;
  // Key splits (PrefillMmaPlan): each CTA of a (query tile, head, sequence)
  // takes keys [split · split_keys, +split_keys); with more than one, the
  // last to finish merges the others' partial rows.
  int num_splits, split_keys;
  float* partial_out;  // [row groups, splits, query tile rows, D]: unnormalized
  float* partial_ml;   // [row groups, splits, query tile rows, 2]: max (base 2), sum
  int* counters;       // [row groups], zero between launches
};

template <typename T, int kHeadDim, int kBlockSize>
__global__ void __launch_bounds__(kThreads) PrefillMmaKernel(const __grid_constant__ Args<T> a) {
  using S = Smem<kHeadDim>;
  constexpr int kStride = S::kStride;
  constexpr int kQueryTile = kRowsPerCta<kHeadDim>;
  constexpr int kM = kMTiles<kHeadDim>;  // 16-row m-tiles per warp
  constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  constexpr int kKSteps = kHeadDim / 16;  // k-steps of Q·Kᵀ
  constexpr int kDTiles = kHeadDim / 8;   // 8-column tiles of the output
  // Keys per pass of the softmax over a shared-memory tile: the whole 64,
  // or 32 at D = 128 with two m-tiles, whose S accumulators then fit in the
  // registers beside O's (a second rescale of O per tile is the price).
  constexpr int kKeyChunk = kHeadDim == 128 && kM == 2 ? 32 : kKeyTile;
  constexpr int kNTiles = kKeyChunk / 8;  // 8-key tiles of S
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const s_q = reinterpret_cast<T*>(smem_raw);
  T* const s_kv = s_q + S::kQElems;  // [buffer][K | V][64][kStride]

  // Grid (heads, query tiles × splits, sequences): x varies fastest, so
  // every head of the tile with the most keys starts first.
  const int b = blockIdx.z, h = blockIdx.x;
  const int num_q_tiles = gridDim.y / a.num_splits;
  const int tile = num_q_tiles - 1 - blockIdx.y / a.num_splits;
  const int split = blockIdx.y % a.num_splits;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int q_begin = a.cu_seqlens_q[b];
  const int q_len = a.cu_seqlens_q[b + 1] - q_begin;
  const int context = a.context_lens[b];

  // The reference kernel's metadata checks; one CTA reports, every CTA of a
  // bad sequence leaves its rows alone.
  const bool bad_queries = q_len < 0 || q_len > context || q_begin < 0 ||
                           a.cu_seqlens_q[b + 1] > a.num_tokens;
  const bool bad_table = context > a.width * kBlockSize;
  const bool over_bound = q_len > a.max_q_len;
  if (bad_queries || bad_table || over_bound) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && tid == 0) {
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
  const int row0 = tile * kQueryTile;  // first query row of this CTA
  if (row0 >= q_len) return;
  const int first_pos = context - q_len;  // position of query row 0
  const int key_limit = first_pos + min(row0 + kQueryTile, q_len);  // keys visible to some row
  // This CTA's keys: [key_begin, key_end), whole 64-key tiles (split_keys is a multiple).
  const int key_begin = split * a.split_keys;
  const int key_end = min(key_limit, key_begin + a.split_keys);
  const int kv_head = h / (a.num_heads / a.num_kv_heads);
  const int32_t* table = a.block_tables + int64_t(b) * a.width;

  // Q tile (rows past the chunk: zeros), then the first K/V tile: group 0.
  for (int c = tid; c < kQueryTile * kChunks; c += kThreads) {
    const int r = c / kChunks, part = c % kChunks;
    const bool valid = row0 + r < q_len;
    const T* src = valid ? a.q + (int64_t(q_begin + row0 + r) * a.num_heads + h) * kHeadDim + part * 8
                         : a.q;
    mma::CpAsync16(s_q + r * kStride + part * 8, src, valid);
  }
  auto load_kv = [&](int t0, int buffer) {
    T* s_k = s_kv + buffer * 2 * S::kTileElems;
    T* s_v = s_k + S::kTileElems;
    for (int c = tid; c < kKeyTile * kChunks; c += kThreads) {
      const int key = c / kChunks, part = c % kChunks;
      const int pos = t0 + key;
      bool valid = pos < key_end;
      int64_t offset = 0;
      if (valid) {
        const int32_t block = table[pos / kBlockSize];
        if (block < 0 || block >= a.num_blocks) {
          ReportDeviceError(a.error, DeviceErrorCode::kBlockId, block, a.num_blocks);
          valid = false;  // zeros: a reported step, whose output is not used
        } else {
          offset = ((int64_t(block) * kBlockSize + pos % kBlockSize) * a.num_kv_heads + kv_head) *
                       kHeadDim + part * 8;
        }
      }
      mma::CpAsync16(s_k + key * kStride + part * 8, a.k_cache + offset, valid);
      mma::CpAsync16(s_v + key * kStride + part * 8, a.v_cache + offset, valid);
    }
  };
  const int first_tile = key_begin / kKeyTile;
  const int num_tiles = key_end > key_begin ? (key_end + kKeyTile - 1) / kKeyTile - first_tile : 0;
  if (num_tiles > 0) load_kv(key_begin, 0);
  mma::CpAsyncCommit();

  const int g = lane / 4, t = lane % 4;
  // The warp's rows: kM m-tiles of 16, contiguous. In m-tile mt this thread
  // holds rows 16·mt + g and 16·mt + g + 8 (the C fragment's layout).
  const int warp_row0 = row0 + warp * 16 * kM;  // chunk row of the warp's first row
  const bool warp_has_rows = warp_row0 < q_len;
  const int warp_last_pos = first_pos + min(warp_row0 + 16 * kM - 1, q_len - 1);
  const int pos0 = first_pos + warp_row0 + g;  // position of this thread's row g of m-tile 0

  // Q's A fragments: in registers for the whole launch where they fit, else
  // loaded from shared memory at each k-step (D = 128 with two m-tiles,
  // whose accumulators take the registers; FlashAttention-2 does the same).
  constexpr bool kQInRegisters = kM * kKSteps <= 8;
  uint32_t qf[kQInRegisters ? kM : 1][kQInRegisters ? kKSteps : 1][4];
  auto q_fragment_row = [&](int mt, int ks) {  // this lane's ldmatrix row of Q's A fragment
    return s_q + (warp * 16 * kM + 16 * mt + lane % 16) * kStride + ks * 16 + (lane / 16) * 8;
  };
  float o[kM][kDTiles][4];
  // m, l: per m-tile, this thread's rows g and g + 8; l is its part of the row sum.
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int d = 0; d < kDTiles; ++d) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.f;
    m[mt][0] = m[mt][1] = NegInf();
    l[mt][0] = l[mt][1] = 0.f;
  }

  for (int j = 0; j < num_tiles; ++j) {
    if (j + 1 < num_tiles) {
      load_kv(key_begin + (j + 1) * kKeyTile, (j + 1) & 1);  // its buffer was last read at tile j − 1
      mma::CpAsyncCommit();
      mma::CpAsyncWait<1>();
    } else {
      mma::CpAsyncWait<0>();
    }
    __syncthreads();
    if (kQInRegisters && j == 0) {
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          mma::LdMatrixX4(qf[kQInRegisters ? mt : 0][kQInRegisters ? ks : 0],
                          q_fragment_row(mt, ks));
        }
      }
    }
    // Not unrolled: at D = 128 the two halves' accumulators would be live
    // at once (255 registers and spills; 246 without).
#pragma unroll 1
    for (int chunk = 0; chunk < kKeyTile / kKeyChunk; ++chunk) {
      const int t0 = key_begin + j * kKeyTile + chunk * kKeyChunk;
      if (!warp_has_rows || t0 > warp_last_pos) continue;  // all in the warp's future
      const T* s_k = s_kv + (j & 1) * 2 * S::kTileElems + chunk * kKeyChunk * kStride;
      const T* s_v = s_k + S::kTileElems;
      float s[kM][kNTiles][4];
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
        for (int n = 0; n < kNTiles; ++n) {
          s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
        }
      }
      // S = Q · Kᵀ: K's rows (keys) are B's columns, so plain ldmatrix gives
      // B; each K fragment serves every m-tile of the warp.
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        uint32_t qa[kM][4];  // this k-step's A fragments
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          if constexpr (kQInRegisters) {
#pragma unroll
            for (int i = 0; i < 4; ++i) qa[mt][i] = qf[mt][ks][i];
          } else {
            mma::LdMatrixX4(qa[mt], q_fragment_row(mt, ks));
          }
        }
#pragma unroll
        for (int np = 0; np < kNTiles / 2; ++np) {
          uint32_t kb[4];
          mma::LdMatrixX4(kb, s_k + (np * 16 + lane % 8 + (lane / 16) * 8) * kStride + ks * 16 +
                                  ((lane / 8) % 2) * 8);
#pragma unroll
          for (int mt = 0; mt < kM; ++mt) {
            mma::Mma16816<T>(s[mt][2 * np], qa[mt], kb[0], kb[1]);
            mma::Mma16816<T>(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
          }
        }
      }
      // Mask the future (and the keys past key_limit, which are in every
      // real row's future) where the tile reaches it: a tile wholly before
      // the warp's first position and inside the split needs no mask. The
      // scores stay unscaled; the max is scaled once (the scale is
      // positive, so max(s)·c = max(s·c) exactly), and each weight is
      // exp2(s·c − m) in one multiply-add. An m-tile wholly in this tile's
      // future comes out all −∞: its rows' max stays, their weights are 0.
      const bool whole = t0 + kKeyChunk <= key_end && t0 + kKeyChunk - 1 <= first_pos + warp_row0;
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
        float tile_max[2] = {NegInf(), NegInf()};
        if (whole) {
#pragma unroll
          for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
            for (int c = 0; c < 4; ++c) tile_max[c / 2] = fmaxf(tile_max[c / 2], s[mt][n][c]);
          }
        } else {
#pragma unroll
          for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int key = t0 + n * 8 + 2 * t + (c & 1);
              const int pos = pos0 + 16 * mt + (c < 2 ? 0 : 8);
              // The future, and keys of the next split (zero-filled here).
              s[mt][n][c] = key <= pos && key < key_end ? s[mt][n][c] : NegInf();
              tile_max[c / 2] = fmaxf(tile_max[c / 2], s[mt][n][c]);
            }
          }
        }
        float alpha[2], base[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
          tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
          tile_max[r] *= a.scale_log2;  // −∞ stays −∞
          const float m_new = fmaxf(m[mt][r], tile_max[r]);
          alpha[r] = m_new == NegInf() ? 1.f : exp2f(m[mt][r] - m_new);  // 0 while m was −∞
          base[r] = m_new == NegInf() ? 0.f : m_new;  // a row with no visible key yet: p = 0
          m[mt][r] = m_new;
          l[mt][r] *= alpha[r];
        }
#pragma unroll
        for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            // Masked: exactly 0.
            s[mt][n][c] = exp2f(fmaf(s[mt][n][c], a.scale_log2, -base[c / 2]));
            l[mt][c / 2] += s[mt][n][c];
          }
        }
#pragma unroll
        for (int d = 0; d < kDTiles; ++d) {
          o[mt][d][0] *= alpha[0];
          o[mt][d][1] *= alpha[0];
          o[mt][d][2] *= alpha[1];
          o[mt][d][3] *= alpha[1];
        }
      }
      // O += P · V: two S tiles are one A fragment; V's rows (keys) are B's
      // rows, so ldmatrix.trans gives B, which serves every m-tile.
#pragma unroll
      for (int kc = 0; kc < kKeyChunk / 16; ++kc) {
        uint32_t pa[kM][4];
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          pa[mt][0] = mma::Pack2<T>(s[mt][2 * kc][0], s[mt][2 * kc][1]);
          pa[mt][1] = mma::Pack2<T>(s[mt][2 * kc][2], s[mt][2 * kc][3]);
          pa[mt][2] = mma::Pack2<T>(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
          pa[mt][3] = mma::Pack2<T>(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < kDTiles / 2; ++dp) {
          uint32_t vb[4];
          mma::LdMatrixX4Trans(vb, s_v + (kc * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride +
                                       dp * 16 + (lane / 16) * 8);
#pragma unroll
          for (int mt = 0; mt < kM; ++mt) {
            mma::Mma16816<T>(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
            mma::Mma16816<T>(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
          }
        }
      }
    }
    __syncthreads();  // this tile's buffer is refilled by the next iteration's prefetch
  }

  // An empty split never waited for its Q tile: no copy may still land in
  // shared memory that the merge below reuses.
  mma::CpAsyncWait<0>();
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 1);
      l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 2);
    }
  }
  if (a.num_splits == 1) {
    if (!warp_has_rows) return;
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = warp_row0 + 16 * mt + g + 8 * r;
        if (row >= q_len) continue;
        const float inv = l[mt][r] > 0.f ? 1.f / l[mt][r] : 0.f;  // no visible key: 0, never NaN
        T* dst = a.out + (int64_t(q_begin + row) * a.num_heads + h) * kHeadDim + 2 * t;
#pragma unroll
        for (int d = 0; d < kDTiles; ++d) {
          *reinterpret_cast<uint32_t*>(dst + d * 8) =
              mma::Pack2<T>(o[mt][d][2 * r] * inv, o[mt][d][2 * r + 1] * inv);
        }
      }
    }
    return;
  }

  // Several splits: this CTA's rows, unnormalized, with their max and sum.
  const int64_t group = (int64_t(b) * num_q_tiles + tile) * a.num_heads + h;
  const int64_t slot = group * a.num_splits + split;
  float* part_o = a.partial_out + slot * kQueryTile * kHeadDim;
  float* part_ml = a.partial_ml + slot * kQueryTile * 2;
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = warp * 16 * kM + 16 * mt + g + 8 * r;  // within the tile
#pragma unroll
      for (int d = 0; d < kDTiles; ++d) {
        *reinterpret_cast<float2*>(part_o + row * kHeadDim + d * 8 + 2 * t) =
            make_float2(o[mt][d][2 * r], o[mt][d][2 * r + 1]);
      }
      if (t == 0) {
        part_ml[row * 2] = m[mt][r];
        part_ml[row * 2 + 1] = l[mt][r];
      }
    }
  }
  // The last CTA of the group merges (after every other's partials are visible).
  __shared__ int s_last;
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(a.counters + group, 1) == a.num_splits - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  // Per row: the splits' weights e^(m_s − M) and 1 / Σ weight · l_s, in the
  // (now idle) tile memory.
  float* s_w = reinterpret_cast<float*>(smem_raw);  // [rows][splits]
  float* s_inv = s_w + kQueryTile * a.num_splits;   // [rows]
  const float* group_ml = a.partial_ml + group * a.num_splits * kQueryTile * 2;
  for (int row = tid; row < kQueryTile; row += kThreads) {
    float m_all = NegInf();
    for (int sp = 0; sp < a.num_splits; ++sp) {
      m_all = fmaxf(m_all, __ldcg(group_ml + (sp * kQueryTile + row) * 2));
    }
    float l_all = 0.f;
    for (int sp = 0; sp < a.num_splits; ++sp) {
      const float m_s = __ldcg(group_ml + (sp * kQueryTile + row) * 2);
      const float w = m_all == NegInf() ? 0.f : exp2f(m_s - m_all);
      s_w[row * a.num_splits + sp] = w;
      l_all += w * __ldcg(group_ml + (sp * kQueryTile + row) * 2 + 1);
    }
    s_inv[row] = l_all > 0.f ? 1.f / l_all : 0.f;
  }
  __syncthreads();
  const float* group_o = a.partial_out + group * a.num_splits * kQueryTile * kHeadDim;
  for (int idx = tid; idx < kQueryTile * kHeadDim / 2; idx += kThreads) {
    const int row = idx / (kHeadDim / 2), d = (idx % (kHeadDim / 2)) * 2;
    if (row0 + row >= q_len) continue;
    float2 sum = make_float2(0.f, 0.f);
    for (int sp = 0; sp < a.num_splits; ++sp) {
      const float w = s_w[row * a.num_splits + sp];
      const float2 v =
          __ldcg(reinterpret_cast<const float2*>(group_o + (int64_t(sp) * kQueryTile + row) * kHeadDim + d));
      sum.x += w * v.x;
      sum.y += w * v.y;
    }
    const float inv = s_inv[row];
    *reinterpret_cast<uint32_t*>(a.out + (int64_t(q_begin + row0 + row) * a.num_heads + h) * kHeadDim + d) =
        mma::Pack2<T>(sum.x * inv, sum.y * inv);
  }
  if (tid == 0) a.counters[group] = 0;  // ready for the next launch
}

template <typename T, int kHeadDim, int kBlockSize>
absl::Status Launch(const PrefillAttentionParams& p, const PrefillMmaPlan& plan, float* workspace,
                    int* counters, DeviceError* error, cudaStream_t stream) {
  auto kernel = PrefillMmaKernel<T, kHeadDim, kBlockSize>;
  constexpr size_t kSmem = Smem<kHeadDim>::kBytes;
  constexpr int kQueryTile = kRowsPerCta<kHeadDim>;
  static_assert(size_t(kQueryTile) * (kMaxPrefillSplits + 1) * 4 <= kSmem,
                "the merge's weights fit in the tiles' shared memory");
  // Above 48 KiB a kernel must opt in to its dynamic shared memory, once.
  static const cudaError_t opt_in = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
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
  a.scale_log2 = p.shape.scale * 1.4426950408889634f;
  a.error = error;
  if (plan.num_splits < 1 || plan.num_splits > kMaxPrefillSplits ||
      (plan.num_splits > 1 && (plan.split_keys % kKeyTile != 0 || workspace == nullptr ||
                               counters == nullptr))) {
    return absl::InternalError("PrefillMma: inconsistent launch plan");
  }
  const int q_tiles = (max_q + kQueryTile - 1) / kQueryTile;
  a.num_splits = plan.num_splits;
  a.split_keys = plan.num_splits > 1 ? plan.split_keys : (1 << 30);
  a.partial_out = workspace;
  a.partial_ml = workspace == nullptr ? nullptr
                                      : workspace + int64_t(p.num_seqs) * q_tiles * p.shape.num_heads *
                                                        plan.num_splits * kQueryTile * kHeadDim;
  a.counters = counters;
  if (int64_t(q_tiles) * plan.num_splits > 65535 || p.num_seqs > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PrefillMma: ", max_q, " queries per sequence (", plan.num_splits,
        " key splits) or ", p.num_seqs, " sequences exceed the grid"));
  }
  const dim3 grid(p.shape.num_heads, q_tiles * plan.num_splits, p.num_seqs);
  kernel<<<grid, kThreads, kSmem, stream>>>(a);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

/// Head dims 64 and 128, block sizes 16 and 32, for one dtype.
template <typename T>
absl::Status LaunchForDType(const PrefillAttentionParams& p, const PrefillMmaPlan& plan,
                            float* workspace, int* counters, DeviceError* error,
                            cudaStream_t stream) {
  const int d = p.shape.head_dim, bs = p.cache.block_size;
  auto go = [&](auto kernel_launch) { return kernel_launch(p, plan, workspace, counters, error, stream); };
  if (d == 64 && bs == 16) return go(Launch<T, 64, 16>);
  if (d == 64 && bs == 32) return go(Launch<T, 64, 32>);
  if (d == 128 && bs == 16) return go(Launch<T, 128, 16>);
  if (d == 128 && bs == 32) return go(Launch<T, 128, 32>);
  return absl::InvalidArgumentError(absl::StrCat("PrefillMma: head_dim ", d, ", block_size ", bs,
                                                 " not compiled (use the reference kernel)"));
}

}  // namespace kvserve::cuda::prefill_mma
