// Paged causal attention on the CPU: the packed variable-length prefill and
// the one-token decode. Both write the step's new K/V into the paged cache,
// then read every key through the sequence's block table.
//
// Memory: per query row a score buffer of one row of the n×n matrix (times the
// GQA group size), reused across rows, so the workspace is O(n), not O(n²).
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_math.h"
#include "kernels/cpu/cpu_ops.h"

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

absl::Status WriteCache(Tensor k, Tensor v, Tensor slot_mapping, const PagedKvCache& cache) {
  const int64_t tokens = k.dim(0);
  const int64_t token_elems = k.dim(1) * k.dim(2);
  const int64_t num_slots = cache.k.dim(0) * cache.block_size;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t slot = slot_mapping.as<int32_t>()[t];
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

// One query position, all `group` query heads that share KV head `kvh`:
// out[g] = softmax(q[g] · K[0..num_keys)ᵀ · scale) · V[0..num_keys).
void AttendGroup(const float* q, int group, int dim, const PagedRows& keys,
                 const PagedRows& values, int num_keys, float scale, std::vector<float>& scores,
                 float* out) {
  scores.resize(static_cast<size_t>(group) * std::max(num_keys, 1));
  for (int j = 0; j < num_keys; ++j) {
    const float* kj = keys.Row(j);
    for (int g = 0; g < group; ++g) scores[size_t(g) * num_keys + j] = Dot(q + g * dim, kj, dim) * scale;
  }
  std::fill(out, out + size_t(group) * dim, 0.f);
  for (int g = 0; g < group; ++g) {
    float* p = &scores[size_t(g) * num_keys];
    if (!GuardedSoftmaxInPlace(p, num_keys)) continue;  // no keys: output stays 0
    float* o = out + g * dim;
    for (int j = 0; j < num_keys; ++j) {
      const float* vj = values.Row(j);
      const float w = p[j];
      for (int d = 0; d < dim; ++d) o[d] += w * vj[d];
    }
  }
}

absl::Status CheckBlockTable(const int32_t* table, int num_keys, int block_size, int max_blocks,
                             int64_t num_blocks) {
  const int needed = (num_keys + block_size - 1) / block_size;
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
  if (absl::Status s = WriteCache(p.k, p.v, p.slot_mapping, p.cache); !s.ok()) return s;
  const AttentionShape& shape = p.shape;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int dim = shape.head_dim;
  const int max_blocks = static_cast<int>(p.block_tables.dim(1));
  const int32_t* cu = p.cu_seqlens_q.as<int32_t>();
  std::vector<float> scores;
  for (int b = 0; b < p.num_seqs; ++b) {
    const int q_begin = cu[b], q_len = cu[b + 1] - cu[b];
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
    for (int kvh = 0; kvh < shape.num_kv_heads; ++kvh) {
      const PagedRows keys{p.cache.k.as<float>(), table, p.cache.block_size,
                           int64_t(shape.num_kv_heads) * dim, int64_t(kvh) * dim};
      PagedRows values = keys;
      values.base = p.cache.v.as<float>();
      for (int i = 0; i < q_len; ++i) {
        const int position = context - q_len + i;  // causal: keys 0..position
        const int64_t row = q_begin + i;
        const float* q = p.q.as<float>() + (row * shape.num_heads + kvh * group) * dim;
        float* out = p.out.as<float>() + (row * shape.num_heads + kvh * group) * dim;
        AttendGroup(q, group, dim, keys, values, position + 1, shape.scale, scores, out);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeAttention(const DecodeAttentionParams& p) {
  if (absl::Status s = WriteCache(p.k, p.v, p.slot_mapping, p.cache); !s.ok()) return s;
  const AttentionShape& shape = p.shape;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int dim = shape.head_dim;
  const int max_blocks = static_cast<int>(p.block_tables.dim(1));
  std::vector<float> scores;
  for (int b = 0; b < p.num_seqs; ++b) {
    const int context = p.context_lens.as<int32_t>()[b];
    const int32_t* table = p.block_tables.as<int32_t>() + int64_t(b) * max_blocks;
    if (absl::Status s = CheckBlockTable(table, context, p.cache.block_size, max_blocks, p.cache.k.dim(0));
        !s.ok()) {
      return s;
    }
    for (int kvh = 0; kvh < shape.num_kv_heads; ++kvh) {
      const PagedRows keys{p.cache.k.as<float>(), table, p.cache.block_size,
                           int64_t(shape.num_kv_heads) * dim, int64_t(kvh) * dim};
      PagedRows values = keys;
      values.base = p.cache.v.as<float>();
      const float* q = p.q.as<float>() + (int64_t(b) * shape.num_heads + kvh * group) * dim;
      float* out = p.out.as<float>() + (int64_t(b) * shape.num_heads + kvh * group) * dim;
      AttendGroup(q, group, dim, keys, values, context, shape.scale, scores, out);
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::cpu
