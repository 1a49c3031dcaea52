// Paged causal attention on the CPU: the packed variable-length prefill and
// the one-token decode. Both write the step's new K/V into the paged cache,
// then read every key through the sequence's block table.
//
// Memory: the prefill keeps one head's K and V contiguous (O(n·d)) and scores
// for a chunk of 64 query rows (O(64·n)); the decode keeps one row of scores
// per query head. Never the n×n matrix.

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_math.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_nn.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vector_math.h"
#include "base/ceil_div.h"

namespace kvserve::cpu {
namespace {

// Reads token rows of one KV head out of a paged cache [blocks, bs, Hkv, D].
struct PagedRows {
  const float* base;
  const int32_t* block_table;  // this sequence's row of block_tables
  int block_size;
  int64_t token_stride;  // Hkv * D
  int64_t head_offset;   // kv_head * D

  const float* Row(int pos) const {
    const int64_t slot = int64_t(block_table[pos / block_size]) * block_size + pos % block_size;
    return base + slot * token_stride + head_offset;
  }
};

}  // namespace

absl::Status WriteKvCache(Tensor k, Tensor v, Tensor slot_mapping, const PagedKvCache& cache) {
  const int64_t tokens = k.dim(0);
  const int64_t token_elems = k.dim(1) * k.dim(2);
  const int64_t num_slots = cache.k.dim(0) * cache.block_size;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t slot = slot_mapping.as<int32_t>()[t];
    if (slot == kPadSlot) continue;  // a padded row: nothing to keep
    if (slot < 0 || slot >= num_slots) {
      return absl::OutOfRangeError(absl::StrCat("KV cache slot ", slot, " not in [0, ", num_slots, ")"));
    }
    std::memcpy(cache.k.as<float>() + slot * token_elems, k.as<float>() + t * token_elems,
                sizeof(float) * token_elems);
    std::memcpy(cache.v.as<float>() + slot * token_elems, v.as<float>() + t * token_elems,
                sizeof(float) * token_elems);
  }
  return absl::OkStatus();
}

namespace {

// x·y with eight independent partial sums: the compiler can keep them in
// one SIMD register without reassociating a single sum (which strict IEEE
// semantics forbid), so this vectorizes at -O2 without -ffast-math.
inline float DotUnrolled(const float* x, const float* y, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * y[i + k];
  }
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// The dispatch of target_clones is an ifunc, whose resolver the dynamic
// loader runs before ThreadSanitizer's runtime is up; instrumented, it
// crashes at load. A TSan build (deploy/run-tsan.sh) compiles one version.
#if defined(__SANITIZE_THREAD__)
#define KV_CPU_CLONES
#else
#define KV_CPU_CLONES __attribute__((target_clones("arch=haswell", "default")))
#endif

// One query position, all `group` query heads that share KV head `kvh`:
// out[g] = softmax(q[g] · K[0..num_keys)ᵀ · scale) · V[0..num_keys). Each key
// and value row is read once for the whole group. Compiled twice: for
// AVX2+FMA machines and for any x86-64, chosen at load time.
KV_CPU_CLONES
void AttendGroup(const float* q, int group, int dim, const PagedRows& keys,
                 const PagedRows& values, int num_keys, float scale, std::vector<float>& scores,
                 float* out) {
  scores.resize(static_cast<size_t>(group) * std::max(num_keys, 1));
  for (int j = 0; j < num_keys; ++j) {
    const float* kj = keys.Row(j);
    for (int g = 0; g < group; ++g) {
      scores[size_t(g) * num_keys + j] = DotUnrolled(q + g * dim, kj, dim) * scale;
    }
  }
  std::fill(out, out + size_t(group) * dim, 0.f);
  for (int g = 0; g < group; ++g) {
    // No keys: a zero output.
    if (!FastGuardedSoftmaxInPlace(&scores[size_t(g) * num_keys], num_keys)) continue;
  }
  for (int j = 0; j < num_keys; ++j) {
    const float* vj = values.Row(j);
    for (int g = 0; g < group; ++g) {
      const float w = scores[size_t(g) * num_keys + j];
      float* o = out + g * dim;
      for (int d = 0; d < dim; ++d) o[d] += w * vj[d];
    }
  }
}

// Copies the first `n` tokens of one KV head out of the paged cache into a
// contiguous [n, D] matrix, so that the prefill can hand it to a GEMM.
void GatherHead(const PagedRows& rows, int n, int dim, float* out) {
  for (int j = 0; j < n; ++j) std::memcpy(out + int64_t(j) * dim, rows.Row(j), sizeof(float) * dim);
}

// The first `n` tokens of one KV head's K, transposed: out[d][j] = K[j][d]
// ([D, n]), so that S = Q·Kᵀ is a product of row-major matrices.
void GatherHeadTransposed(const PagedRows& rows, int n, int dim, float* out) {
  for (int j = 0; j < n; ++j) {
    const float* v = rows.Row(j);
    for (int d = 0; d < dim; ++d) out[int64_t(d) * n + j] = v[d];
  }
}

// Rows of one prefill chunk handled per product: scores are at most
// kPrefillQueryChunk × context floats per head (never the n×n matrix).
constexpr int kPrefillQueryChunk = 64;

// Causal attention of `q_len` query rows (the last ones of a `context`-token
// sequence) for one query head, as the reference writes it, a chunk of rows
// at a time: S = Q·Kᵀ, scaled and masked (keys after each row's position),
// guarded softmax, O = P·V. `q` and `out` rows are `row_stride` apart; `k_t`
// is Kᵀ ([D, context]), `v` is V ([context, D]). The products are
// gemm_nn.h's (OpenBLAS's SSE3 sgemm on this CPU was an eighth of a
// quantized model's prefill).
void PrefillHead(const float* q, int64_t row_stride, int q_len, int context, const float* k_t,
                 const float* v, int dim, float scale, std::vector<float>& scores, float* out) {
  for (int r0 = 0; r0 < q_len; r0 += kPrefillQueryChunk) {
    const int rows = std::min(kPrefillQueryChunk, q_len - r0);
    const int first_pos = context - q_len + r0;
    const int num_keys = first_pos + rows;  // the chunk's last row sees this many keys
    scores.resize(size_t(rows) * num_keys);
    ProductNN(q + r0 * row_stride, row_stride, k_t, context, rows, dim, num_keys, scores.data(),
              num_keys);
    for (int r = 0; r < rows; ++r) {
      float* s = &scores[size_t(r) * num_keys];
      const int visible = first_pos + r + 1;  // keys 0..position
      for (int j = 0; j < visible; ++j) s[j] *= scale;
      FastGuardedSoftmaxInPlace(s, visible);
      std::fill(s + visible, s + num_keys, 0.f);  // masked: exactly zero weight
    }
    ProductNN(scores.data(), num_keys, v, dim, rows, num_keys, dim, out + r0 * row_stride,
              row_stride);
  }
}

absl::Status CheckBlockTable(const int32_t* table, int num_keys, int block_size, int max_blocks,
                             int64_t num_blocks) {
  const int needed = CeilDiv(num_keys, block_size);
  if (needed > max_blocks) {
    return absl::OutOfRangeError(absl::StrCat("context of ", num_keys, " tokens needs ", needed,
                                              " blocks; the block table holds ", max_blocks));
  }
  for (int i = 0; i < needed; ++i) {
    if (table[i] < 0 || table[i] >= num_blocks) {
      return absl::OutOfRangeError(absl::StrCat("block id ", table[i], " not in [0, ", num_blocks, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PrefillAttention(const PrefillAttentionParams& p) {
  if (!p.kv_written) {
    if (absl::Status s = WriteKvCache(p.k, p.v, p.slot_mapping, p.cache); !s.ok()) return s;
  }
  const AttentionShape& shape = p.shape;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int dim = shape.head_dim;
  const int max_blocks = static_cast<int>(p.block_tables.dim(1));
  const int32_t* cu = p.cu_seqlens_q.as<int32_t>();
  for (int b = 0; b < p.num_seqs; ++b) {
    const int q_len = cu[b + 1] - cu[b];
    const int context = p.context_lens.as<int32_t>()[b];
    if (q_len < 0 || q_len > context || cu[b + 1] > p.q.dim(0)) {
      return absl::OutOfRangeError(absl::StrCat("PrefillAttention: sequence ", b, " has ", q_len,
                                                " queries for a context of ", context));
    }
    const int32_t* table = p.block_tables.as<int32_t>() + int64_t(b) * max_blocks;
    if (absl::Status s = CheckBlockTable(table, context, p.cache.block_size, max_blocks, p.cache.k.dim(0));
        !s.ok()) {
      return s;
    }
  }
  // One work item per (sequence, KV head); its GEMMs run single-threaded.
  ThreadPool::Shared().ParallelFor(p.num_seqs * shape.num_kv_heads, [&](int item) {
    thread_local std::vector<float> scores, k_t, v_rows;
    const int b = item / shape.num_kv_heads, kvh = item % shape.num_kv_heads;
    const int q_begin = cu[b], q_len = cu[b + 1] - cu[b];
    const int context = p.context_lens.as<int32_t>()[b];
    const int32_t* table = p.block_tables.as<int32_t>() + int64_t(b) * max_blocks;
    const PagedRows keys{p.cache.k.as<float>(), table, p.cache.block_size,
                         int64_t(shape.num_kv_heads) * dim, int64_t(kvh) * dim};
    PagedRows values = keys;
    values.base = p.cache.v.as<float>();
    // Kᵀ and V of this head, contiguous: O(n·d), read by every query head of the group.
    k_t.resize(size_t(context) * dim);
    v_rows.resize(size_t(context) * dim);
    GatherHeadTransposed(keys, context, dim, k_t.data());
    GatherHead(values, context, dim, v_rows.data());
    const int64_t row_stride = int64_t(shape.num_heads) * dim;
    for (int g = 0; g < group; ++g) {
      const int64_t offset = int64_t(q_begin) * row_stride + int64_t(kvh * group + g) * dim;
      PrefillHead(p.q.as<float>() + offset, row_stride, q_len, context, k_t.data(),
                  v_rows.data(), dim, shape.scale, scores, p.out.as<float>() + offset);
    }
  });
  return absl::OkStatus();
}

absl::Status DecodeAttention(const DecodeAttentionParams& p) {
  if (!p.kv_written) {
    if (absl::Status s = WriteKvCache(p.k, p.v, p.slot_mapping, p.cache); !s.ok()) return s;
  }
  const AttentionShape& shape = p.shape;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int dim = shape.head_dim;
  const int max_blocks = static_cast<int>(p.block_tables.dim(1));
  for (int b = 0; b < p.num_seqs; ++b) {
    const int32_t* table = p.block_tables.as<int32_t>() + int64_t(b) * max_blocks;
    if (absl::Status s = CheckBlockTable(table, p.context_lens.as<int32_t>()[b], p.cache.block_size,
                                         max_blocks, p.cache.k.dim(0));
        !s.ok()) {
      return s;
    }
  }
  // One work item per (sequence, KV head): independent, and each reads its
  // own K/V once for the whole query-head group.
  ThreadPool::Shared().ParallelFor(p.num_seqs * shape.num_kv_heads, [&](int item) {
    thread_local std::vector<float> scores;
    const int b = item / shape.num_kv_heads, kvh = item % shape.num_kv_heads;
    const int32_t* table = p.block_tables.as<int32_t>() + int64_t(b) * max_blocks;
    const PagedRows keys{p.cache.k.as<float>(), table, p.cache.block_size,
                         int64_t(shape.num_kv_heads) * dim, int64_t(kvh) * dim};
    PagedRows values = keys;
    values.base = p.cache.v.as<float>();
    const int64_t offset = (int64_t(b) * shape.num_heads + kvh * group) * dim;
    AttendGroup(p.q.as<float>() + offset, group, dim, keys, values,
                p.context_lens.as<int32_t>()[b], shape.scale, scores, p.out.as<float>() + offset);
  });
  return absl::OkStatus();
}

}  // namespace kvserve::cpu
