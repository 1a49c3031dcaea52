// The attention ops against the padded reference that mirrors
// softmax(QKᵀ/√d + M)·V:
//   - packed variable-length prefill (no padding) = reference, for every row;
//   - a prompt prefilled in chunks = the same prompt in one piece;
//   - decode through scattered, non-contiguous block tables = attention over
//     contiguous K/V ("paged = contiguous");
//   - fully masked rows are 0, never NaN; scores of ±1e4 do not overflow;
//   - memory stays O(n·d): no n×n score matrix for a long prompt.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/reference_attention.h"

namespace kvserve {
namespace {

struct Shape {
  int heads, kv_heads, dim, block_size;
};

std::string Name(const Shape& s) {
  return absl::StrCat("H", s.heads, "_KV", s.kv_heads, "_D", s.dim, "_B", s.block_size);
}

// Random padded batch [B, S_max, heads, D] with garbage in the padding.
struct PaddedBatch {
  int batch, seq;
  std::vector<int32_t> lengths;
  std::vector<float> q, k, v;
};

PaddedBatch RandomBatch(const Shape& s, std::vector<int32_t> lengths, std::mt19937& rng,
                        float scale = 1.f) {
  PaddedBatch p;
  p.batch = static_cast<int>(lengths.size());
  p.seq = *std::max_element(lengths.begin(), lengths.end());
  p.lengths = std::move(lengths);
  std::normal_distribution<float> normal(0.f, scale);
  auto fill = [&](std::vector<float>& v, int heads) {
    v.resize(size_t(p.batch) * p.seq * heads * s.dim);
    for (float& x : v) x = normal(rng);
  };
  fill(p.q, s.heads);
  fill(p.k, s.kv_heads);
  fill(p.v, s.kv_heads);
  return p;
}

std::vector<float> Reference(const Shape& s, PaddedBatch& p) {
  std::vector<float> out(p.q.size(), NAN);
  const int64_t b = p.batch, n = p.seq;
  EXPECT_TRUE(PaddedReferenceAttention(
                  Tensor(p.q.data(), DType::kFloat32, {b, n, s.heads, s.dim}),
                  Tensor(p.k.data(), DType::kFloat32, {b, n, s.kv_heads, s.dim}),
                  Tensor(p.v.data(), DType::kFloat32, {b, n, s.kv_heads, s.dim}), p.lengths.data(),
                  /*causal=*/true, 1.f / std::sqrt(float(s.dim)),
                  Tensor(out.data(), DType::kFloat32, {b, n, s.heads, s.dim}))
                  .ok());
  return out;
}

// A paged cache whose blocks are handed out in a shuffled order, so block
// tables are scattered and never contiguous.
struct Paged {
  Paged(const Shape& s, int num_blocks, std::mt19937& rng)
      : shape(s),
        k(size_t(num_blocks) * s.block_size * s.kv_heads * s.dim, NAN),  // poisoned
        v(k.size(), NAN),
        free_blocks(num_blocks) {
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
    num = num_blocks;
  }
  PagedKvCache View() {
    return {Tensor(k.data(), DType::kFloat32, {num, shape.block_size, shape.kv_heads, shape.dim}),
            Tensor(v.data(), DType::kFloat32, {num, shape.block_size, shape.kv_heads, shape.dim}),
            shape.block_size};
  }
  // Grows `table` to cover `tokens`.
  void Cover(std::vector<int32_t>& table, int tokens) {
    while (int(table.size()) * shape.block_size < tokens) {
      table.push_back(free_blocks.back());
      free_blocks.pop_back();
    }
  }
  int32_t Slot(const std::vector<int32_t>& table, int pos) const {
    return table[pos / shape.block_size] * shape.block_size + pos % shape.block_size;
  }
  Shape shape;
  std::vector<float> k, v;
  std::vector<int32_t> free_blocks;
  int num;
};

const float* Row(const std::vector<float>& t, int seq_len, int heads, int dim, int b, int i) {
  return t.data() + ((int64_t(b) * seq_len + i) * heads) * dim;
}

// Runs chunked prefill: sequence b's tokens [0, len) in chunks of `chunk`
// (all sequences advance together, as the engine batches them), returning
// outputs packed per sequence, [len, H, D] each.
std::vector<std::vector<float>> ChunkedPrefill(const Shape& s, PaddedBatch& p, int chunk,
                                               std::mt19937& rng) {
  CpuBackend cpu;
  int total_blocks = 0;
  for (int len : p.lengths) total_blocks += (len + s.block_size - 1) / s.block_size;
  Paged cache(s, total_blocks + 3, rng);
  std::vector<std::vector<int32_t>> tables(p.batch);
  std::vector<std::vector<float>> outs(p.batch);
  for (int b = 0; b < p.batch; ++b) outs[b].assign(size_t(p.lengths[b]) * s.heads * s.dim, NAN);
  for (int start = 0; start < p.seq; start += chunk) {
    std::vector<float> q, k, v;
    std::vector<int32_t> cu{0}, ctx, slots, seqs;
    int width = 1;
    for (int b = 0; b < p.batch; ++b) {
      const int end = std::min(p.lengths[b], start + chunk);
      if (end <= start) continue;
      cache.Cover(tables[b], end);
      width = std::max<int>(width, tables[b].size());
      for (int i = start; i < end; ++i) {
        const float* qr = Row(p.q, p.seq, s.heads, s.dim, b, i);
        q.insert(q.end(), qr, qr + s.heads * s.dim);
        const float* kr = Row(p.k, p.seq, s.kv_heads, s.dim, b, i);
        k.insert(k.end(), kr, kr + s.kv_heads * s.dim);
        const float* vr = Row(p.v, p.seq, s.kv_heads, s.dim, b, i);
        v.insert(v.end(), vr, vr + s.kv_heads * s.dim);
        slots.push_back(cache.Slot(tables[b], i));
      }
      cu.push_back(cu.back() + end - start);
      ctx.push_back(end);
      seqs.push_back(b);
    }
    if (seqs.empty()) break;
    std::vector<int32_t> table_rows;
    for (int b : seqs) {
      std::vector<int32_t> row = tables[b];
      row.resize(width, -1);
      table_rows.insert(table_rows.end(), row.begin(), row.end());
    }
    const int64_t t = cu.back(), n = seqs.size();
    std::vector<float> out(q.size(), NAN);
    PrefillAttentionParams pp;
    pp.q = Tensor(q.data(), DType::kFloat32, {t, s.heads, s.dim});
    pp.k = Tensor(k.data(), DType::kFloat32, {t, s.kv_heads, s.dim});
    pp.v = Tensor(v.data(), DType::kFloat32, {t, s.kv_heads, s.dim});
    pp.out = Tensor(out.data(), DType::kFloat32, {t, s.heads, s.dim});
    pp.cu_seqlens_q = Tensor(cu.data(), DType::kInt32, {n + 1});
    pp.context_lens = Tensor(ctx.data(), DType::kInt32, {n});
    pp.block_tables = Tensor(table_rows.data(), DType::kInt32, {n, width});
    pp.slot_mapping = Tensor(slots.data(), DType::kInt32, {t});
    pp.cache = cache.View();
    pp.shape = {s.heads, s.kv_heads, s.dim, 1.f / std::sqrt(float(s.dim))};
    pp.num_seqs = static_cast<int>(n);
    EXPECT_TRUE(cpu.PrefillAttention(pp).ok());
    for (size_t j = 0; j < seqs.size(); ++j) {
      const int b = seqs[j];
      std::copy(out.begin() + int64_t(cu[j]) * s.heads * s.dim,
                out.begin() + int64_t(cu[j + 1]) * s.heads * s.dim,
                outs[b].begin() + int64_t(start) * s.heads * s.dim);
    }
  }
  return outs;
}

void ExpectRowsMatch(const Shape& s, const PaddedBatch& p, const std::vector<float>& reference,
                     const std::vector<std::vector<float>>& packed, float tolerance) {
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < p.lengths[b]; ++i) {
      const float* want = Row(reference, p.seq, s.heads, s.dim, b, i);
      const float* got = packed[b].data() + int64_t(i) * s.heads * s.dim;
      for (int e = 0; e < s.heads * s.dim; ++e) {
        ASSERT_FALSE(std::isnan(got[e])) << "seq " << b << " row " << i;
        ASSERT_NEAR(got[e], want[e], tolerance) << "seq " << b << " row " << i << " elem " << e;
      }
    }
  }
}

class AttentionTest : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionTest, PackedPrefillEqualsPaddedReference) {
  const Shape s = GetParam();
  std::mt19937 rng(7);
  PaddedBatch p = RandomBatch(s, {1, 17, 5, 64, 130, 33}, rng);
  const std::vector<float> reference = Reference(s, p);
  ExpectRowsMatch(s, p, reference, ChunkedPrefill(s, p, /*chunk=*/p.seq, rng), 2e-5f);
}

TEST_P(AttentionTest, ChunkedPrefillEqualsOnePiece) {
  const Shape s = GetParam();
  std::mt19937 rng(8);
  PaddedBatch p = RandomBatch(s, {3, 100, 47, 129}, rng);
  const std::vector<float> reference = Reference(s, p);
  for (int chunk : {1, 7, 16, 50}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    ExpectRowsMatch(s, p, reference, ChunkedPrefill(s, p, chunk, rng), 2e-5f);
  }
}

TEST_P(AttentionTest, PagedDecodeEqualsContiguousAttention) {
  const Shape s = GetParam();
  std::mt19937 rng(9);
  // Every sequence decodes its last token against a cache filled through a
  // scattered block table; the reference sees contiguous K/V.
  PaddedBatch p = RandomBatch(s, {1, 2, 16, 17, 31, 200, 77}, rng);
  const std::vector<float> reference = Reference(s, p);
  CpuBackend cpu;
  int total_blocks = 0;
  for (int len : p.lengths) total_blocks += (len + s.block_size - 1) / s.block_size;
  Paged cache(s, total_blocks + 5, rng);
  std::vector<std::vector<int32_t>> tables(p.batch);
  const int kv_row = s.kv_heads * s.dim;
  for (int b = 0; b < p.batch; ++b) {
    cache.Cover(tables[b], p.lengths[b]);
    for (int i = 0; i + 1 < p.lengths[b]; ++i) {  // the cache holds every token but the last
      const int32_t slot = cache.Slot(tables[b], i);
      std::copy_n(Row(p.k, p.seq, s.kv_heads, s.dim, b, i), kv_row, cache.k.begin() + int64_t(slot) * kv_row);
      std::copy_n(Row(p.v, p.seq, s.kv_heads, s.dim, b, i), kv_row, cache.v.begin() + int64_t(slot) * kv_row);
    }
  }
  int width = 0;
  for (auto& t : tables) width = std::max<int>(width, t.size());
  std::vector<float> q, k, v;
  std::vector<int32_t> ctx, slots, table_rows;
  for (int b = 0; b < p.batch; ++b) {
    const int last = p.lengths[b] - 1;
    const float* qr = Row(p.q, p.seq, s.heads, s.dim, b, last);
    q.insert(q.end(), qr, qr + s.heads * s.dim);
    const float* kr = Row(p.k, p.seq, s.kv_heads, s.dim, b, last);
    k.insert(k.end(), kr, kr + kv_row);
    const float* vr = Row(p.v, p.seq, s.kv_heads, s.dim, b, last);
    v.insert(v.end(), vr, vr + kv_row);
    ctx.push_back(p.lengths[b]);
    slots.push_back(cache.Slot(tables[b], last));
    std::vector<int32_t> row = tables[b];
    row.resize(width, -1);
    table_rows.insert(table_rows.end(), row.begin(), row.end());
  }
  const int64_t n = p.batch;
  std::vector<float> out(q.size(), NAN);
  DecodeAttentionParams dp;
  dp.q = Tensor(q.data(), DType::kFloat32, {n, s.heads, s.dim});
  dp.k = Tensor(k.data(), DType::kFloat32, {n, s.kv_heads, s.dim});
  dp.v = Tensor(v.data(), DType::kFloat32, {n, s.kv_heads, s.dim});
  dp.out = Tensor(out.data(), DType::kFloat32, {n, s.heads, s.dim});
  dp.context_lens = Tensor(ctx.data(), DType::kInt32, {n});
  dp.block_tables = Tensor(table_rows.data(), DType::kInt32, {n, width});
  dp.slot_mapping = Tensor(slots.data(), DType::kInt32, {n});
  dp.cache = cache.View();
  dp.shape = {s.heads, s.kv_heads, s.dim, 1.f / std::sqrt(float(s.dim))};
  dp.num_seqs = p.batch;
  ASSERT_TRUE(cpu.DecodeAttention(dp).ok());
  for (int b = 0; b < p.batch; ++b) {
    const float* want = Row(reference, p.seq, s.heads, s.dim, b, p.lengths[b] - 1);
    for (int e = 0; e < s.heads * s.dim; ++e) {
      ASSERT_NEAR(out[size_t(b) * s.heads * s.dim + e], want[e], 2e-5f) << "seq " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(Shape{4, 4, 16, 16}, Shape{8, 2, 64, 16},
                                           Shape{8, 1, 128, 32}, Shape{4, 1, 64, 8}),
                         [](const auto& info) { return Name(info.param); });

TEST(ReferenceAttentionTest, FullyMaskedRowsAreZeroNeverNaN) {
  const Shape s{2, 1, 16, 16};
  std::mt19937 rng(1);
  PaddedBatch p = RandomBatch(s, {0, 3, 10}, rng);  // a sequence of length 0: every row masked
  const std::vector<float> out = Reference(s, p);
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < p.seq; ++i) {
      const float* row = Row(out, p.seq, s.heads, s.dim, b, i);
      for (int e = 0; e < s.heads * s.dim; ++e) {
        ASSERT_FALSE(std::isnan(row[e]));
        if (i >= p.lengths[b]) {
          ASSERT_EQ(row[e], 0.f) << "padded row " << b << "," << i;
        }
      }
    }
  }
}

TEST(ReferenceAttentionTest, LargeScoresDoNotOverflow) {
  // Scores around ±1e4: exp without the max subtraction would overflow to inf.
  const Shape s{1, 1, 16, 16};
  std::mt19937 rng(2);
  PaddedBatch p = RandomBatch(s, {12}, rng, /*scale=*/50.f);  // |q·k|/4 reaches ~1e4
  float max_score = 0.f;
  for (int i = 0; i < p.seq; ++i) {
    for (int j = 0; j <= i; ++j) {
      float dot = 0.f;
      for (int d = 0; d < s.dim; ++d) dot += p.q[i * s.dim + d] * p.k[j * s.dim + d];
      max_score = std::max(max_score, std::fabs(dot / 4.f));
    }
  }
  ASSERT_GT(max_score, 5e3f);
  const std::vector<float> reference = Reference(s, p);
  for (float x : reference) ASSERT_TRUE(std::isfinite(x));
  std::mt19937 rng2(3);
  ExpectRowsMatch(s, p, reference, ChunkedPrefill(s, p, 5, rng2), 1e-3f);
  // At such scales the softmax is one-hot: each row is the V of its best key.
  for (int i = 0; i < p.seq; ++i) {
    int best = 0;
    float best_score = -INFINITY;
    for (int j = 0; j <= i; ++j) {
      float dot = 0.f;
      for (int d = 0; d < s.dim; ++d) dot += p.q[i * s.dim + d] * p.k[j * s.dim + d];
      if (dot > best_score) best_score = dot, best = j;
    }
    for (int d = 0; d < s.dim; ++d) ASSERT_NEAR(reference[i * s.dim + d], p.v[best * s.dim + d], 1e-3f);
  }
}

long PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(AttentionMemoryTest, LongPromptNeverMaterializesTheScoreMatrix) {
  // 8192 tokens: the full score matrix would be 8192² floats = 256 MiB per head.
  const Shape s{1, 1, 16, 16};
  constexpr int kTokens = 8192;
  std::mt19937 rng(4);
  PaddedBatch p = RandomBatch(s, {kTokens}, rng);
  const long before = PeakRssKiB();
  const std::vector<float> reference = Reference(s, p);
  std::vector<std::vector<float>> packed = ChunkedPrefill(s, p, kTokens, rng);
  const long growth_mib = (PeakRssKiB() - before) / 1024;
  // Inputs, outputs and cache are a few MiB; allow 32 MiB of headroom.
  EXPECT_LT(growth_mib, 32) << "peak RSS grew by " << growth_mib << " MiB";
  for (int i = kTokens - 4; i < kTokens; ++i) {
    for (int d = 0; d < s.dim; ++d) ASSERT_NEAR(packed[0][i * s.dim + d], reference[i * s.dim + d], 2e-5f);
  }
}

}  // namespace
}  // namespace kvserve
