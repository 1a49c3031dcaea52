// The CUDA attention ops against the CPU ones (themselves tested against the
// padded reference in attention_test.cc), on the same paged scenario: a
// cache poisoned with NaN, blocks handed out in a shuffled order, earlier
// tokens already cached, the step's new K/V written by the op itself.
//
// Swept: every served head_dim (cuda::kServedHeadDims: 16, 32, 64, 96,
// 128) × block size {16, 32} × GQA ratio
// {1, 4, 8} (and one 16), in float32, bfloat16 and float16, the 16-bit
// dtypes both on the fast kernels (tensor-core prefill, flash decode) and on
// the reference ones; prefill of whole
// prompts (1..300 tokens), chunked prefill against long cached contexts
// (up to 2500), decode of 64 sequences (1..600 tokens, never block
// multiples), one 4096-token sequence (split over the KV length), a mix
// of long and short ones (splits with nothing to do) and short contexts
// (one split: the kernel's own normalized output, no merge). Tolerance on
// ‖gpu − cpu‖ / ‖cpu‖: float32 1e-4, bfloat16 1e-2, float16 5e-3; no NaN;
// a decode row with no key at all is exactly 0.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dispatch.h"
#include "tests/cuda_test_util.h"

namespace kvserve::testing {
namespace {

struct Shape {
  int heads, kv_heads, dim, block_size;
};

std::string Name(const Shape& s) {
  return absl::StrCat("H", s.heads, "_KV", s.kv_heads, "_D", s.dim, "_B", s.block_size);
}

// One sequence of a step: `context` tokens once the step's `queries` new
// tokens (its last ones) are written.
struct Seq {
  int context, queries;
};

// Runs one step of sequences through both backends and compares the outputs.
class Scenario {
 public:
  Scenario(const Shape& s, DType dtype, std::vector<Seq> seqs, uint32_t seed)
      : s_(s), dtype_(dtype), seqs_(std::move(seqs)), rng_(seed) {}

  void Run(cuda::CudaBackend& gpu, bool decode) {
    const int kv_row = s_.kv_heads * s_.dim, q_row = s_.heads * s_.dim;
    // Blocks: every sequence's, plus spares, in a shuffled order.
    int total_blocks = 3;
    for (const Seq& q : seqs_) total_blocks += std::max(q.context, 1) / s_.block_size + 1;
    std::vector<int32_t> free_blocks(total_blocks);
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), rng_);
    const int64_t cache_elems = int64_t(total_blocks) * s_.block_size * kv_row;
    std::vector<float> cache_k(cache_elems, NAN), cache_v(cache_elems, NAN);

    std::vector<std::vector<int32_t>> tables(seqs_.size());
    std::vector<float> q, k, v;
    std::vector<int32_t> cu{0}, context_lens, slots;
    int width = 1, max_q = 0, max_context = 0;
    for (size_t b = 0; b < seqs_.size(); ++b) {
      const Seq& sq = seqs_[b];
      const int tokens = std::max(sq.context, sq.queries);  // a decode of context 0 still writes one
      while (int(tables[b].size()) * s_.block_size < tokens) {
        tables[b].push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      width = std::max<int>(width, tables[b].size());
      const std::vector<float> keys = RandomValues(rng_, int64_t(tokens) * kv_row, dtype_);
      const std::vector<float> values = RandomValues(rng_, int64_t(tokens) * kv_row, dtype_);
      const std::vector<float> queries = RandomValues(rng_, int64_t(sq.queries) * q_row, dtype_);
      q.insert(q.end(), queries.begin(), queries.end());
      for (int pos = 0; pos < tokens; ++pos) {
        const int32_t slot = tables[b][pos / s_.block_size] * s_.block_size + pos % s_.block_size;
        const float* kr = keys.data() + int64_t(pos) * kv_row;
        const float* vr = values.data() + int64_t(pos) * kv_row;
        if (pos < tokens - sq.queries) {  // cached by earlier steps
          std::copy_n(kr, kv_row, cache_k.begin() + int64_t(slot) * kv_row);
          std::copy_n(vr, kv_row, cache_v.begin() + int64_t(slot) * kv_row);
        } else {  // this step's: written by the op
          k.insert(k.end(), kr, kr + kv_row);
          v.insert(v.end(), vr, vr + kv_row);
          slots.push_back(slot);
        }
      }
      cu.push_back(cu.back() + sq.queries);
      context_lens.push_back(sq.context);
      max_q = std::max(max_q, sq.queries);
      max_context = std::max(max_context, sq.context);
    }
    std::vector<int32_t> table_rows;
    for (auto& t : tables) {
      std::vector<int32_t> row = t;
      row.resize(width, -1);
      table_rows.insert(table_rows.end(), row.begin(), row.end());
    }
    const int64_t t = cu.back(), n = seqs_.size(), blocks = total_blocks;
    const AttentionShape shape{s_.heads, s_.kv_heads, s_.dim, 1.f / std::sqrt(float(s_.dim))};

    // CPU: float32 on the same (rounded) values.
    CpuBackend cpu;
    std::vector<float> want(t * q_row, NAN), cpu_k = cache_k, cpu_v = cache_v;
    const PagedKvCache cpu_cache{HostTensor(cpu_k, {blocks, s_.block_size, s_.kv_heads, s_.dim}),
                                 HostTensor(cpu_v, {blocks, s_.block_size, s_.kv_heads, s_.dim}),
                                 s_.block_size};
    // GPU: the same cache image (NaN poison included) in the dtype.
    DeviceTensor d_q(gpu, dtype_, {t, s_.heads, s_.dim}), d_k(gpu, dtype_, {t, s_.kv_heads, s_.dim});
    DeviceTensor d_v(gpu, dtype_, {t, s_.kv_heads, s_.dim}), d_out(gpu, dtype_, {t, s_.heads, s_.dim});
    DeviceTensor d_ck(gpu, dtype_, {blocks, s_.block_size, s_.kv_heads, s_.dim});
    DeviceTensor d_cv(gpu, dtype_, {blocks, s_.block_size, s_.kv_heads, s_.dim});
    DeviceTensor d_cu(gpu, DType::kInt32, {n + 1}), d_ctx(gpu, DType::kInt32, {n});
    DeviceTensor d_tables(gpu, DType::kInt32, {n, width}), d_slots(gpu, DType::kInt32, {t});
    d_q.Set(q);
    d_k.Set(k);
    d_v.Set(v);
    d_ck.Set(cache_k);
    d_cv.Set(cache_v);
    d_cu.SetInts(cu);
    d_ctx.SetInts(context_lens);
    d_tables.SetInts(table_rows);
    d_slots.SetInts(slots);
    const PagedKvCache gpu_cache{d_ck, d_cv, s_.block_size};

    absl::Status cpu_status, gpu_status;
    if (decode) {
      DecodeAttentionParams p;
      p.q = HostTensor(q, {n, s_.heads, s_.dim});
      p.k = HostTensor(k, {n, s_.kv_heads, s_.dim});
      p.v = HostTensor(v, {n, s_.kv_heads, s_.dim});
      p.out = HostTensor(want, {n, s_.heads, s_.dim});
      p.context_lens = HostInts(context_lens, {n});
      p.block_tables = HostInts(table_rows, {n, width});
      p.slot_mapping = HostInts(slots, {n});
      p.cache = cpu_cache;
      p.shape = shape;
      p.num_seqs = static_cast<int>(n);
      p.max_context_len = max_context;
      cpu_status = cpu.DecodeAttention(p);
      p.q = d_q, p.k = d_k, p.v = d_v, p.out = d_out;
      p.context_lens = d_ctx, p.block_tables = d_tables, p.slot_mapping = d_slots;
      p.cache = gpu_cache;
      gpu_status = gpu.DecodeAttention(p);
    } else {
      PrefillAttentionParams p;
      p.q = HostTensor(q, {t, s_.heads, s_.dim});
      p.k = HostTensor(k, {t, s_.kv_heads, s_.dim});
      p.v = HostTensor(v, {t, s_.kv_heads, s_.dim});
      p.out = HostTensor(want, {t, s_.heads, s_.dim});
      p.cu_seqlens_q = HostInts(cu, {n + 1});
      p.context_lens = HostInts(context_lens, {n});
      p.block_tables = HostInts(table_rows, {n, width});
      p.slot_mapping = HostInts(slots, {t});
      p.cache = cpu_cache;
      p.shape = shape;
      p.num_seqs = static_cast<int>(n);
      p.max_q_len = max_q;
      p.max_context_len = max_context;
      cpu_status = cpu.PrefillAttention(p);
      p.q = d_q, p.k = d_k, p.v = d_v, p.out = d_out;
      p.cu_seqlens_q = d_cu, p.context_lens = d_ctx, p.block_tables = d_tables;
      p.slot_mapping = d_slots;
      p.cache = gpu_cache;
      gpu_status = gpu.PrefillAttention(p);
    }
    ASSERT_TRUE(cpu_status.ok()) << cpu_status;
    ASSERT_TRUE(gpu_status.ok()) << gpu_status;
    const std::vector<float> got = d_out.Get();
    ASSERT_FALSE(AnyNonFinite(got)) << "NaN or inf in the GPU output (unwritten or poisoned reads)";
    const double err = RelativeError(got, want);
    EXPECT_LE(err, Tolerance(dtype_)) << "relative error " << err;
    // A sequence with no key at all (decode of context 0): exactly zero.
    for (size_t b = 0; b < seqs_.size(); ++b) {
      if (seqs_[b].context > 0) continue;
      for (int e = 0; e < q_row; ++e) ASSERT_EQ(got[b * q_row + e], 0.f) << "sequence " << b;
    }
    // The op wrote the step's K/V into the cache where the CPU did.
    const std::vector<float> gpu_k = d_ck.Get();
    for (int32_t slot : slots) {
      for (int e = 0; e < kv_row; ++e) {
        ASSERT_EQ(gpu_k[int64_t(slot) * kv_row + e], cpu_k[int64_t(slot) * kv_row + e]) << "slot " << slot;
      }
    }
  }

 private:
  Shape s_;
  DType dtype_;
  std::vector<Seq> seqs_;
  std::mt19937 rng_;
};

// {300, 300}: three query tiles of 128 rows (two m-tiles per warp), the last
// one partly past the prompt's end.
std::vector<Seq> WholePrompts() {
  return {{1, 1}, {17, 17}, {67, 67}, {130, 130}, {33, 33}, {300, 300}};
}
// {1000, 130}: a chunk of two query tiles whose rows sit at 870..999.
std::vector<Seq> ChunksAgainstLongContexts() {
  return {{2500, 21}, {700, 64}, {129, 5}, {1, 1}, {1000, 130}};
}

std::vector<Seq> ManyDecodes(std::mt19937& rng) {
  std::vector<Seq> seqs;
  for (int i = 0; i < 63; ++i) seqs.push_back({int(1 + rng() % 600), 1});
  seqs.push_back({0, 1});  // no key at all: the row must be exactly 0
  return seqs;
}

class CudaAttentionTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::DescribeDevice();
  }
};

StepLimits DecodeLimits(const Shape& s);

// Each dtype on the default backend (the fast kernels where they serve the
// shape: tensor-core prefill and flash decode for bf16/f16, D 64/128) and,
// for the 16-bit dtypes, on one with only the reference kernels.
struct Variant {
  DType dtype;
  bool fast_kernels;
};
std::vector<Variant> Variants() {
  return {{DType::kFloat32, true},   {DType::kBFloat16, true},  {DType::kBFloat16, false},
          {DType::kFloat16, true},   {DType::kFloat16, false}};
}
std::string VariantName(const Variant& v) {
  return absl::StrCat(DTypeName(v.dtype), v.fast_kernels ? "" : ", reference kernels");
}

TEST_P(CudaAttentionTest, PrefillMatchesTheCpu) {
  uint32_t seed = 100;
  for (const Variant& variant : Variants()) {
    const DType dtype = variant.dtype;
    SCOPED_TRACE(VariantName(variant));
    auto gpu = NewCudaBackend(dtype, /*graphs=*/false, variant.fast_kernels);
    ASSERT_NE(gpu, nullptr);
    {
      SCOPED_TRACE("whole prompts");
      Scenario(GetParam(), dtype, WholePrompts(), seed++).Run(*gpu, /*decode=*/false);
    }
    if (dtype == DType::kFloat16) continue;  // keeps the CPU reference's time down
    {
      SCOPED_TRACE("chunks against long cached contexts");
      Scenario(GetParam(), dtype, ChunksAgainstLongContexts(), seed++).Run(*gpu, false);
    }
    // Reserved, the tensor-core kernel may split a short chunk's keys (few
    // CTAs: 1 query tile × H heads) and merge them.
    ASSERT_TRUE(gpu->Reserve(DecodeLimits(GetParam())).ok());
    {
      SCOPED_TRACE("one short chunk behind a long context (key splits)");
      Scenario(GetParam(), dtype, {{2500, 21}}, seed++).Run(*gpu, false);
    }
  }
}

// The reservation a model of this shape would make for these scenarios (64
// sequences, contexts up to 4096): sizes the split workspace, as in serving.
StepLimits DecodeLimits(const Shape& s) {
  StepLimits limits;
  limits.max_tokens = 64;
  limits.max_seqs = 64;
  limits.max_context = 4096;
  limits.attention = AttentionShape{s.heads, s.kv_heads, s.dim, 1.f / std::sqrt(float(s.dim))};
  return limits;
}

TEST_P(CudaAttentionTest, DecodeMatchesTheCpu) {
  std::mt19937 rng(7);
  uint32_t seed = 200;
  for (const Variant& variant : Variants()) {
    const DType dtype = variant.dtype;
    SCOPED_TRACE(VariantName(variant));
    auto gpu = NewCudaBackend(dtype, /*graphs=*/false, variant.fast_kernels);
    ASSERT_NE(gpu, nullptr);
    {
      // Before Reserve there is no split workspace: one split, still exact.
      SCOPED_TRACE("one sequence of 4096 tokens, nothing reserved (one split)");
      Scenario(GetParam(), dtype, {{4096, 1}}, seed++).Run(*gpu, true);
    }
    ASSERT_TRUE(gpu->Reserve(DecodeLimits(GetParam())).ok());
    {
      SCOPED_TRACE("64 sequences of 0..600 tokens");
      Scenario(GetParam(), dtype, ManyDecodes(rng), seed++).Run(*gpu, /*decode=*/true);
    }
    {
      SCOPED_TRACE("one sequence of 4096 tokens (split over the KV length)");
      Scenario(GetParam(), dtype, {{4096, 1}}, seed++).Run(*gpu, true);
    }
    {
      SCOPED_TRACE("long and short together (splits with no keys)");
      Scenario(GetParam(), dtype, {{4095, 1}, {3, 1}, {1000, 1}}, seed++).Run(*gpu, true);
    }
    {
      // At most 128 keys: one split whatever the GPU, so DecodeKernel writes
      // the normalized output itself (no merge), a path the sweeps above
      // never take on a GPU with many SMs. The flash kernel splits from one
      // 16..64-key pass on, so this has a few splits there.
      SCOPED_TRACE("contexts of at most 128 tokens (one split, no merge)");
      Scenario(GetParam(), dtype, {{1, 1}, {17, 1}, {100, 1}, {128, 1}, {0, 1}}, seed++)
          .Run(*gpu, true);
    }
    {
      // At most 16 keys: one pass of every flash layout, so one split there too.
      SCOPED_TRACE("contexts of at most 16 tokens (one flash split)");
      Scenario(GetParam(), dtype, {{1, 1}, {9, 1}, {16, 1}, {0, 1}}, seed++).Run(*gpu, true);
    }
  }
}

std::vector<Shape> AllShapes() {
  std::vector<Shape> shapes;
  for (int dim : cuda::kServedHeadDims) {
    for (int block : cuda::kServedBlockSizes) {
      shapes.push_back({2, 2, dim, block});  // MHA
      shapes.push_back({8, 2, dim, block});  // GQA 4
      shapes.push_back({8, 1, dim, block});  // GQA 8 (MQA)
    }
  }
  shapes.push_back({16, 1, 64, 16});  // a group of 16: two CTAs share the KV head
  shapes.push_back({6, 3, 128, 32});  // a group of 2 in the flash kernel's tile of 4
  shapes.push_back({14, 2, 64, 16});  // a group of 7 (Qwen2-0.5B) in a tile of 8
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionTest, ::testing::ValuesIn(AllShapes()),
                         [](const auto& info) { return Name(info.param); });

// Bad metadata is refused the way the CPU refuses it, at the next sync.
TEST(CudaAttentionErrorsTest, BadBlockIdsAndNarrowTablesAreOutOfRange) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::DescribeDevice();
  auto gpu = NewCudaBackend(DType::kFloat32);
  ASSERT_NE(gpu, nullptr);
  std::mt19937 rng(3);
  const int heads = 4, kv_heads = 2, dim = 64, bs = 16, blocks = 4;
  const AttentionShape shape{heads, kv_heads, dim, 0.125f};
  DeviceTensor q(*gpu, DType::kFloat32, {1, heads, dim}), k(*gpu, DType::kFloat32, {1, kv_heads, dim});
  DeviceTensor v(*gpu, DType::kFloat32, {1, kv_heads, dim}), out(*gpu, DType::kFloat32, {1, heads, dim});
  DeviceTensor ck(*gpu, DType::kFloat32, {blocks, bs, kv_heads, dim});
  DeviceTensor cv(*gpu, DType::kFloat32, {blocks, bs, kv_heads, dim});
  DeviceTensor ctx(*gpu, DType::kInt32, {1}), table(*gpu, DType::kInt32, {1, 2});
  DeviceTensor slot(*gpu, DType::kInt32, {1});
  q.Set(RandomValues(rng, heads * dim, DType::kFloat32));
  k.Set(RandomValues(rng, kv_heads * dim, DType::kFloat32));
  v.Set(RandomValues(rng, kv_heads * dim, DType::kFloat32));
  ck.Set(std::vector<float>(blocks * bs * kv_heads * dim, 1.f));
  cv.Set(std::vector<float>(blocks * bs * kv_heads * dim, 1.f));
  DecodeAttentionParams p;
  p.q = q, p.k = k, p.v = v, p.out = out, p.context_lens = ctx, p.block_tables = table;
  p.slot_mapping = slot, p.cache = {ck, cv, bs}, p.shape = shape, p.num_seqs = 1;

  ctx.SetInts({20});
  table.SetInts({1, 9});  // block 9 does not exist
  slot.SetInts({1 * bs + 3});
  p.max_context_len = 20;
  ASSERT_TRUE(gpu->DecodeAttention(p).ok());
  absl::Status s = gpu->Synchronize();
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(s.message(), "block id 9 not in [0, 4)");

  ctx.SetInts({40});  // 40 tokens need 3 blocks; the table holds 2
  table.SetInts({1, 2});
  p.max_context_len = 40;
  ASSERT_TRUE(gpu->DecodeAttention(p).ok());
  s = gpu->Synchronize();
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(s.message(), "context of 40 tokens needs 3 blocks; the block table holds 2");

  ctx.SetInts({20});
  slot.SetInts({blocks * bs});  // one past the last slot
  ASSERT_TRUE(gpu->DecodeAttention(p).ok());
  s = gpu->Synchronize();
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(s.message(), "KV cache slot 64 not in [0, 64)");
  EXPECT_TRUE(gpu->Synchronize().ok());

  // An unserved head dim (80: its lanes would need 40 of a warp's 32) is
  // refused by name before anything runs, by both ops and by Reserve.
  const int bad_dim = 80;
  DeviceTensor q80(*gpu, DType::kFloat32, {1, heads, bad_dim});
  DeviceTensor k80(*gpu, DType::kFloat32, {1, kv_heads, bad_dim});
  DeviceTensor v80(*gpu, DType::kFloat32, {1, kv_heads, bad_dim});
  DeviceTensor out80(*gpu, DType::kFloat32, {1, heads, bad_dim});
  DeviceTensor ck80(*gpu, DType::kFloat32, {blocks, bs, kv_heads, bad_dim});
  DeviceTensor cv80(*gpu, DType::kFloat32, {blocks, bs, kv_heads, bad_dim});
  p.q = q80, p.k = k80, p.v = v80, p.out = out80, p.cache = {ck80, cv80, bs};
  p.shape.head_dim = bad_dim;
  slot.SetInts({1 * bs + 3});
  const std::string refusal =
      "unsupported head_dim: 80 (the CUDA backend serves 16, 32, 64, 96, 128)";
  s = gpu->DecodeAttention(p);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), refusal);
  PrefillAttentionParams pp;
  DeviceTensor cu(*gpu, DType::kInt32, {2});
  cu.SetInts({0, 1});
  pp.q = q80, pp.k = k80, pp.v = v80, pp.out = out80, pp.cu_seqlens_q = cu;
  pp.context_lens = ctx, pp.block_tables = table, pp.slot_mapping = slot;
  pp.cache = {ck80, cv80, bs}, pp.shape = p.shape, pp.num_seqs = 1, pp.max_q_len = 1;
  s = gpu->PrefillAttention(pp);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), refusal);
  StepLimits limits;
  limits.max_tokens = limits.max_seqs = 1;
  limits.max_context = 64;
  limits.attention = p.shape;
  s = gpu->Reserve(limits);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), refusal);
  EXPECT_TRUE(gpu->Synchronize().ok());
}

}  // namespace
}  // namespace kvserve::testing
