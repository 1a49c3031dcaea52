// Host-side logic of the CUDA backend that needs no GPU, so it runs (and
// never skips) on the build machines too:
//   - the decode split plan: every split count and size the kernels accept
//     (1..256 splits of a multiple of 128 keys), covering the longest context
//     the launch was sized for and the block tables can address, no split
//     that starts past it, the workspace the merge kernel indexes, and the
//     CTA counts the plan aims for;
//   - the device error word's messages are the CPU backend's, word for word;
//   - the decode split workspace: no plan asks for more than
//     MaxDecodeWorkspaceFloats (what CudaBackend::Reserve allocates), and a
//     plan capped to less is still one the kernels accept;
//   - the served head dims and block sizes, refused by name otherwise (80
//     included: the kernels' warp layout cannot hold it);
//   - the cuBLASLt plan buckets of row counts.
#include <algorithm>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/device_error.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/fast_kernels.h"
#include "kernels/cuda/flash_decode.h"
#include "kernels/cuda/flash_decode_layout.h"
#include "kernels/cuda/prefill_mma.h"

namespace kvserve::cuda {
namespace {

// Only the fields PlanDecodeAttention reads; no memory behind the tensors.
DecodeAttentionParams DecodeShape(int seqs, int heads, int kv_heads, int dim, int block_size,
                                  int width, int max_context) {
  DecodeAttentionParams p;
  p.num_seqs = seqs;
  p.shape = AttentionShape{heads, kv_heads, dim, 1.f};
  p.cache.block_size = block_size;
  p.block_tables = Tensor(nullptr, DType::kInt32, {seqs, width});
  p.max_context_len = max_context;
  return p;
}

TEST(DecodePlanTest, EverySplitIsOneTheKernelsAccept) {
  for (int num_sms : {1, 16, 132}) {
    for (int seqs : {1, 2, 7, 32, 64, 256}) {
      for (int kv_heads : {1, 2, 8}) {
        for (int group : {1, 4, 8, 12, 16}) {
          for (int context : {0, 1, 127, 128, 129, 600, 4096, 4097, 32768, 131072}) {
            const int block_size = 16, width = std::max(1, (context + block_size - 1) / block_size);
            const DecodeAttentionParams p =
                DecodeShape(seqs, kv_heads * group, kv_heads, 128, block_size, width, context);
            const DecodePlan plan = PlanDecodeAttention(p, num_sms);
            SCOPED_TRACE(::testing::Message() << "sms " << num_sms << ", B " << seqs << ", Hkv "
                                              << kv_heads << ", group " << group << ", context "
                                              << context << ": " << plan.num_splits << " x "
                                              << plan.split_keys);
            ASSERT_GE(plan.num_splits, 1);
            ASSERT_LE(plan.num_splits, 256);  // MergeKernel's shared arrays
            ASSERT_GT(plan.split_keys, 0);
            ASSERT_EQ(plan.split_keys % 128, 0);  // 4 warps × 32 keys per pass
            ASSERT_EQ(plan.group_chunks, (group + 7) / 8);
            // The launch covers the longest context (else DecodeKernel reports a
            // launch bound for a valid sequence), and no split starts past it.
            const int64_t covered = int64_t(plan.num_splits) * plan.split_keys;
            ASSERT_GE(covered, std::max(context, 1));
            ASSERT_LT(int64_t(plan.num_splits - 1) * plan.split_keys, std::max(context, 1));
            // [B, H, splits, D] partial outputs then [B, H, splits, 2] (max, sum).
            const size_t want = plan.num_splits > 1 ? size_t(seqs) * kv_heads * group *
                                                          plan.num_splits * (128 + 2)
                                                    : 0;
            ASSERT_EQ(plan.workspace_floats, want);
            // Splits only while the CTAs do not cover the device twice already.
            const int64_t ctas = int64_t(seqs) * kv_heads * plan.group_chunks;
            if (plan.num_splits > 1) {
              ASSERT_LT(ctas * (plan.num_splits - 1), 2 * num_sms);
            }
            // What Reserve allocates for this many sequences and this context
            // holds this plan (and, by the sweep, every smaller one).
            const size_t reserved =
                MaxDecodeWorkspaceFloats(seqs, p.shape, std::max(context, 1), num_sms);
            ASSERT_LE(plan.workspace_floats, reserved);
            ASSERT_EQ(PlanDecodeAttention(p, num_sms, reserved).num_splits, plan.num_splits);
            // A smaller reservation: fewer splits within it, still covering.
            for (size_t cap : {size_t(0), reserved / 3, plan.workspace_floats / 2}) {
              const DecodePlan capped = PlanDecodeAttention(p, num_sms, cap);
              ASSERT_LE(capped.workspace_floats, cap);
              ASSERT_GE(capped.num_splits, 1);
              ASSERT_LE(capped.num_splits, plan.num_splits);
              ASSERT_EQ(capped.split_keys % 128, 0);
              const int64_t capped_covered = int64_t(capped.num_splits) * capped.split_keys;
              ASSERT_GE(capped_covered, std::max(context, 1));
              ASSERT_LT(int64_t(capped.num_splits - 1) * capped.split_keys, std::max(context, 1));
            }
          }
        }
      }
    }
  }
}

TEST(DecodePlanTest, TheDocumentedCases) {
  // docs/cuda.md: one 4096-token sequence with 8 KV heads becomes 256 CTAs.
  DecodePlan plan = PlanDecodeAttention(DecodeShape(1, 32, 8, 128, 16, 256, 4096), 132);
  EXPECT_EQ(plan.num_splits, 32);
  EXPECT_EQ(plan.split_keys, 128);
  // A full batch already fills the device: no split, no merge, no workspace.
  plan = PlanDecodeAttention(DecodeShape(64, 32, 8, 128, 16, 256, 4096), 132);
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_EQ(plan.workspace_floats, 0u);
  // Short contexts: one split whatever the batch (at least 128 keys each).
  plan = PlanDecodeAttention(DecodeShape(1, 8, 1, 64, 16, 8, 128), 132);
  EXPECT_EQ(plan.num_splits, 1);
  // The longest context there is: at most 256 splits.
  plan = PlanDecodeAttention(DecodeShape(1, 8, 1, 128, 16, 8192, 131072), 132);
  EXPECT_EQ(plan.num_splits, 256);
  EXPECT_EQ(plan.split_keys, 512);
}

TEST(DecodePlanTest, TheReservationCoversEveryBatchUpToItsSize) {
  // Llama-3.2-1B's attention (32 heads, 8 KV heads, D 64) on an H100.
  const AttentionShape shape{32, 8, 64, 1.f};
  const int max_seqs = 64, max_context = 4096, sms = 132;
  const size_t reserved = MaxDecodeWorkspaceFloats(max_seqs, shape, max_context, sms);
  EXPECT_GT(reserved, 0u);
  for (int seqs = 1; seqs <= max_seqs; ++seqs) {
    for (int context = 1; context <= max_context; context += 37) {
      const DecodePlan plan = PlanDecodeAttention(
          DecodeShape(seqs, 32, 8, 64, 16, max_context / 16, context), sms);
      ASSERT_LE(plan.workspace_floats, reserved) << seqs << " x " << context;
    }
  }
  // Nothing to split, nothing to reserve.
  EXPECT_EQ(MaxDecodeWorkspaceFloats(max_seqs, shape, 128, sms), 0u);
}

TEST(DecodePlanTest, ContextsBeyondTheBlockTableAreNotPlannedFor) {
  // max_context_len larger than the tables can address (a caller's mistake,
  // reported by the kernel as a bad block table): the plan sizes for the tables.
  const DecodePlan capped = PlanDecodeAttention(DecodeShape(1, 8, 8, 64, 32, 4, 100000), 132);
  EXPECT_GE(int64_t(capped.num_splits) * capped.split_keys, 4 * 32);
  EXPECT_LE(capped.num_splits, 1);
  // max_context_len 0 (not given): the whole table.
  const DecodePlan whole = PlanDecodeAttention(DecodeShape(1, 8, 8, 64, 16, 512, 0), 132);
  EXPECT_GE(int64_t(whole.num_splits) * whole.split_keys, 512 * 16);
}

// The flash-decode layout: every compiled combination is one the kernel's
// loops cover exactly (rows of whole 16-byte vectors, tiles inside a block).
TEST(FlashDecodeLayoutTest, CompiledShapesAreExactTilings) {
  for (int dim : {64, 128}) {
    for (int block : {16, 32}) {
      for (int tile : {1, 4, 8}) {
        const flash_decode::Layout l = flash_decode::MakeLayout(2, dim, block, tile);
        SCOPED_TRACE(::testing::Message() << "D " << dim << ", block " << block << ", tile " << tile);
        ASSERT_TRUE(l.ok);
        EXPECT_EQ(l.vec, 8);
        EXPECT_EQ(l.lanes_per_key * l.vec, dim);
        EXPECT_EQ(l.lanes_per_key * l.keys_per_row, 32);
        EXPECT_EQ(l.rows * l.keys_per_row, l.tile_keys);
        EXPECT_EQ(block % l.tile_keys, 0);  // a tile never spans two blocks
        EXPECT_EQ(l.pass_keys, 4 * l.tile_keys);
        EXPECT_LE(l.rows, tile >= 8 ? 2 : 4);  // the register budget
      }
    }
  }
  // Rows that are not a power-of-two number of lanes take the reference.
  EXPECT_FALSE(flash_decode::MakeLayout(2, 96, 16, 4).ok);
  EXPECT_FALSE(flash_decode::Serves(4, 64, 16));   // float32
  EXPECT_FALSE(flash_decode::Serves(2, 32, 16));   // not compiled
  EXPECT_EQ(flash_decode::GroupTile(1), 1);
  EXPECT_EQ(flash_decode::GroupTile(2), 4);
  EXPECT_EQ(flash_decode::GroupTile(4), 4);
  EXPECT_EQ(flash_decode::GroupTile(7), 8);
  EXPECT_EQ(flash_decode::GroupTile(16), 8);
}

DecodeAttentionParams Bf16DecodeShape(int seqs, int heads, int kv_heads, int dim, int block_size,
                                      int width, int max_context) {
  DecodeAttentionParams p = DecodeShape(seqs, heads, kv_heads, dim, block_size, width, max_context);
  p.q = Tensor(nullptr, DType::kBFloat16, {seqs, heads, dim});
  return p;
}

TEST(FlashDecodePlanTest, EverySplitIsOneTheKernelAccepts) {
  for (int num_sms : {1, 16, 132}) {
    for (int seqs : {1, 3, 32, 64, 256}) {
      for (int kv_heads : {1, 8}) {
        for (int group : {1, 2, 4, 7, 8, 16}) {
          for (int dim : {64, 128}) {
            for (int block_size : {16, 32}) {
              for (int context : {0, 1, 15, 16, 17, 140, 600, 4096, 4097, 131072}) {
                const int width = std::max(1, (context + block_size - 1) / block_size);
                const DecodeAttentionParams p = Bf16DecodeShape(
                    seqs, kv_heads * group, kv_heads, dim, block_size, width, context);
                ASSERT_TRUE(FlashDecodeServes(p));
                const FlashDecodePlan plan = PlanFlashDecode(p, num_sms);
                const flash_decode::Layout l =
                    flash_decode::MakeLayout(2, dim, block_size, plan.group_tile);
                SCOPED_TRACE(::testing::Message()
                             << "sms " << num_sms << ", B " << seqs << ", Hkv " << kv_heads
                             << ", group " << group << ", D " << dim << ", block " << block_size
                             << ", context " << context << ": " << plan.num_splits << " x "
                             << plan.split_keys);
                ASSERT_GE(plan.num_splits, 1);
                ASSERT_LE(plan.num_splits, flash_decode::kMaxSplits);
                ASSERT_EQ(plan.split_keys % l.pass_keys, 0);  // whole passes, whole tiles
                ASSERT_GE(plan.group_chunks * plan.group_tile, group);
                ASSERT_LT((plan.group_chunks - 1) * plan.group_tile, group);
                // max_context_len 0 means "not given": the plan covers the whole table.
                const int64_t keys = context > 0 ? context : int64_t(width) * block_size;
                const int64_t covered = int64_t(plan.num_splits) * plan.split_keys;
                ASSERT_GE(covered, keys);
                ASSERT_LT(int64_t(plan.num_splits - 1) * plan.split_keys, keys);
                const size_t want_ws = plan.num_splits > 1 ? size_t(seqs) * kv_heads * group *
                                                                 plan.num_splits * (dim + 2)
                                                           : 0;
                ASSERT_EQ(plan.workspace_floats, want_ws);
                ASSERT_EQ(plan.counters, plan.num_splits > 1
                                             ? size_t(seqs) * kv_heads * plan.group_chunks
                                             : 0);
                // What Reserve allocates holds this plan, and a capped plan
                // stays within its cap and still covers the context.
                const FlashDecodeReservation r = MaxFlashDecodeReservation(
                    seqs, p.shape, DType::kBFloat16, block_size, keys, num_sms);
                ASSERT_LE(plan.workspace_floats, r.workspace_floats);
                ASSERT_LE(plan.counters, r.counters);
                ASSERT_EQ(PlanFlashDecode(p, num_sms, r.workspace_floats, r.counters).num_splits,
                          plan.num_splits);
                for (size_t cap : {size_t(0), plan.workspace_floats / 2}) {
                  const FlashDecodePlan capped = PlanFlashDecode(p, num_sms, cap, r.counters);
                  ASSERT_LE(capped.workspace_floats, cap);
                  ASSERT_GE(int64_t(capped.num_splits) * capped.split_keys, keys);
                }
                const FlashDecodePlan no_counters = PlanFlashDecode(p, num_sms, SIZE_MAX, 0);
                ASSERT_EQ(no_counters.num_splits, 1);
              }
            }
          }
        }
      }
    }
  }
}

TEST(FlashDecodePlanTest, TheDocumentedCases) {
  // docs/cuda.md: Llama-3.2-1B (32 heads, 8 KV heads, D 64) on an H100.
  // Batch 1 at 140 keys: three splits of one 64-key pass, 24 CTAs.
  FlashDecodePlan plan = PlanFlashDecode(Bf16DecodeShape(1, 32, 8, 64, 16, 9, 140), 132);
  EXPECT_EQ(plan.group_tile, 4);
  EXPECT_EQ(plan.num_splits, 3);
  EXPECT_EQ(plan.split_keys, 64);
  // Batch 1 at 4096 keys: 66 splits of 64 keys, 528 CTAs (4 per SM).
  plan = PlanFlashDecode(Bf16DecodeShape(1, 32, 8, 64, 16, 256, 4096), 132);
  EXPECT_EQ(plan.num_splits, 64);
  EXPECT_EQ(plan.split_keys, 64);
  // Batch 32 at 4096 keys: 256 CTAs already. With 4 resident per SM (528),
  // two splits are one wave; with 3 (396, the H200 run), two splits would be
  // a second wave of 116 CTAs, so three (768 CTAs, two full waves).
  plan = PlanFlashDecode(Bf16DecodeShape(32, 32, 8, 64, 16, 256, 4096), 132);
  EXPECT_EQ(plan.num_splits, 2);
  plan = PlanFlashDecode(Bf16DecodeShape(32, 32, 8, 64, 16, 256, 4096), 132, SIZE_MAX, SIZE_MAX,
                         /*ctas_per_sm=*/3);
  EXPECT_EQ(plan.num_splits, 3);
  // Batch 32 at 140 keys with 3 per SM: one split, one wave (not 512 CTAs in two).
  plan = PlanFlashDecode(Bf16DecodeShape(32, 32, 8, 64, 16, 9, 140), 132, SIZE_MAX, SIZE_MAX, 3);
  EXPECT_EQ(plan.num_splits, 1);
  // Batch 128: the batch fills the device, no split, no workspace.
  plan = PlanFlashDecode(Bf16DecodeShape(128, 32, 8, 64, 16, 256, 4096), 132);
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_EQ(plan.workspace_floats, 0u);
}

// The tensor-core prefill's key splits: only when the (128-row query tile,
// head, sequence) CTAs leave SMs idle, whole 64-key tiles, at least four per
// split, covering the context, within what Reserve allocates.
TEST(PrefillMmaPlanTest, SplitsOnlyWhereTheGpuIsIdleAndStayWithinTheReservation) {
  for (int num_sms : {16, 132}) {
    for (int seqs : {1, 2, 5}) {
      for (int heads : {2, 8, 32}) {
        for (int dim : {64, 128}) {
          for (int queries : {1, 21, 64, 130, 1024}) {
            for (int context : {1, 100, 255, 256, 2500, 32768}) {
              if (queries > context) continue;
              PrefillAttentionParams p;
              p.num_seqs = seqs;
              p.shape = AttentionShape{heads, heads, dim, 1.f};
              p.q = Tensor(nullptr, DType::kBFloat16, {int64_t(seqs) * queries, heads, dim});
              p.cache.block_size = 16;
              p.block_tables = Tensor(nullptr, DType::kInt32, {seqs, (context + 15) / 16});
              p.max_q_len = queries;
              p.max_context_len = context;
              const PrefillMmaReservation r = MaxPrefillMmaReservation(dim, num_sms);
              const PrefillMmaPlan plan = PlanPrefillMma(p, num_sms, r.workspace_floats, r.counters);
              SCOPED_TRACE(::testing::Message() << "sms " << num_sms << ", B " << seqs << ", H "
                                                << heads << ", D " << dim << ", q " << queries
                                                << ", context " << context << ": "
                                                << plan.num_splits << " x " << plan.split_keys);
              const int rows = PrefillMmaTileRows(dim);
              EXPECT_EQ(rows, 128);
              const int64_t groups = int64_t((queries + rows - 1) / rows) * heads * seqs;
              ASSERT_GE(plan.num_splits, 1);
              ASSERT_LE(plan.num_splits, kMaxPrefillSplits);
              if (plan.num_splits == 1) {
                EXPECT_EQ(plan.workspace_floats, 0u);
                continue;
              }
              EXPECT_LT(groups, num_sms);  // a full GPU is never split
              EXPECT_EQ(plan.split_keys % 64, 0);
              EXPECT_GE(plan.split_keys, 256);
              EXPECT_GE(int64_t(plan.num_splits) * plan.split_keys, context);
              EXPECT_LT(int64_t(plan.num_splits - 1) * plan.split_keys, context);
              EXPECT_EQ(plan.workspace_floats, size_t(groups) * plan.num_splits * rows * (dim + 2));
              EXPECT_EQ(plan.counters, size_t(groups));
              EXPECT_LE(plan.workspace_floats, r.workspace_floats);
              EXPECT_LE(plan.counters, r.counters);
              // Without a reservation (before Reserve): no split.
              EXPECT_EQ(PlanPrefillMma(p, num_sms, 0, 0).num_splits, 1);
            }
          }
        }
      }
    }
  }
  // The documented case: a 21-token chunk behind 2479 keys, 32 heads, H100.
  PrefillAttentionParams tail;
  tail.num_seqs = 1;
  tail.shape = AttentionShape{32, 8, 64, 1.f};
  tail.q = Tensor(nullptr, DType::kBFloat16, {21, 32, 64});
  tail.cache.block_size = 16;
  tail.block_tables = Tensor(nullptr, DType::kInt32, {1, 157});
  tail.max_q_len = 21;
  tail.max_context_len = 2500;
  const PrefillMmaPlan plan = PlanPrefillMma(tail, 132);
  EXPECT_EQ(plan.num_splits, 8);  // min(ceil(264 / 32) = 9, 2500 / 256 = 9) → 9 of 320 → 8 of 320
  EXPECT_EQ(plan.split_keys, 320);
}

// The device word's messages against the CPU backend's on the same mistake.
class DeviceErrorMessageTest : public ::testing::Test {
 protected:
  static std::string Gpu(DeviceErrorCode code, int64_t a, int64_t b, int64_t c = 0, int op = 0) {
    const absl::Status s = DeviceErrorStatus(DeviceError{static_cast<int32_t>(code), op, a, b, c});
    EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
    return std::string(s.message());
  }
  static std::string Cpu(const absl::Status& s) {
    EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
    return std::string(s.message());
  }

  CpuBackend cpu_;
};

TEST_F(DeviceErrorMessageTest, IdsAndPositions) {
  std::vector<float> table(50 * 4, 1.f), out(3 * 4);
  std::vector<int32_t> ids = {3, 50, 7};
  EXPECT_EQ(Gpu(DeviceErrorCode::kTokenId, 50, 50),
            Cpu(cpu_.Embedding(Tensor(ids.data(), DType::kInt32, {3}),
                               Tensor(table.data(), DType::kFloat32, {50, 4}),
                               Tensor(out.data(), DType::kFloat32, {3, 4}))));
  std::vector<int32_t> rows = {1, 7};
  std::vector<float> x(5 * 4, 1.f), gathered(2 * 4);
  EXPECT_EQ(Gpu(DeviceErrorCode::kGatherRow, 7, 5),
            Cpu(cpu_.GatherRows(Tensor(x.data(), DType::kFloat32, {5, 4}),
                                Tensor(rows.data(), DType::kInt32, {2}),
                                Tensor(gathered.data(), DType::kFloat32, {2, 4}))));
  const int heads = 2, kv_heads = 1, dim = 4;
  std::vector<float> qkv(4 * dim, 1.f), cos_sin(3 * dim, 1.f), q(2 * dim), k(dim), v(dim);
  std::vector<int32_t> positions = {3};
  RopeSplitParams rope{Tensor(qkv.data(), DType::kFloat32, {1, (heads + 2 * kv_heads) * dim}),
                       Tensor(positions.data(), DType::kInt32, {1}),
                       Tensor(cos_sin.data(), DType::kFloat32, {3, dim}),
                       Tensor(q.data(), DType::kFloat32, {1, heads, dim}),
                       Tensor(k.data(), DType::kFloat32, {1, kv_heads, dim}),
                       Tensor(v.data(), DType::kFloat32, {1, kv_heads, dim}),
                       AttentionShape{heads, kv_heads, dim, 1.f}};
  EXPECT_EQ(Gpu(DeviceErrorCode::kRopePosition, 3, 3), Cpu(cpu_.RopeSplitQkv(rope)));
}

TEST_F(DeviceErrorMessageTest, CacheSlotsBlockTablesAndQueries) {
  const int heads = 2, kv_heads = 1, dim = 4, bs = 16, blocks = 4;
  std::vector<float> q(heads * dim, 1.f), k(kv_heads * dim, 1.f), v(k), out(q.size());
  std::vector<float> ck(blocks * bs * kv_heads * dim, 1.f), cv(ck);
  std::vector<int32_t> ctx = {20}, table = {1, 9}, slot = {19};
  DecodeAttentionParams p;
  p.q = Tensor(q.data(), DType::kFloat32, {1, heads, dim});
  p.k = Tensor(k.data(), DType::kFloat32, {1, kv_heads, dim});
  p.v = Tensor(v.data(), DType::kFloat32, {1, kv_heads, dim});
  p.out = Tensor(out.data(), DType::kFloat32, {1, heads, dim});
  p.context_lens = Tensor(ctx.data(), DType::kInt32, {1});
  p.block_tables = Tensor(table.data(), DType::kInt32, {1, 2});
  p.slot_mapping = Tensor(slot.data(), DType::kInt32, {1});
  p.cache = {Tensor(ck.data(), DType::kFloat32, {blocks, bs, kv_heads, dim}),
             Tensor(cv.data(), DType::kFloat32, {blocks, bs, kv_heads, dim}), bs};
  p.shape = AttentionShape{heads, kv_heads, dim, 1.f};
  p.num_seqs = 1;
  p.max_context_len = 20;
  EXPECT_EQ(Gpu(DeviceErrorCode::kBlockId, 9, blocks), Cpu(cpu_.DecodeAttention(p)));
  ctx[0] = 40;  // 3 blocks needed, 2 in the table
  table[1] = 2;
  EXPECT_EQ(Gpu(DeviceErrorCode::kBlockTable, 40, 2, bs), Cpu(cpu_.DecodeAttention(p)));
  ctx[0] = 20;
  slot[0] = blocks * bs;  // one past the last slot
  EXPECT_EQ(Gpu(DeviceErrorCode::kKvSlot, blocks * bs, blocks * bs), Cpu(cpu_.DecodeAttention(p)));

  // A chunk longer than its sequence's context.
  std::vector<float> pq(5 * heads * dim, 1.f), pk(5 * kv_heads * dim, 1.f), pv(pk), pout(pq.size());
  std::vector<int32_t> cu = {0, 5}, pctx = {3}, ptable = {0, 1}, pslots = {0, 1, 2, 3, 4};
  PrefillAttentionParams pp;
  pp.q = Tensor(pq.data(), DType::kFloat32, {5, heads, dim});
  pp.k = Tensor(pk.data(), DType::kFloat32, {5, kv_heads, dim});
  pp.v = Tensor(pv.data(), DType::kFloat32, {5, kv_heads, dim});
  pp.out = Tensor(pout.data(), DType::kFloat32, {5, heads, dim});
  pp.cu_seqlens_q = Tensor(cu.data(), DType::kInt32, {2});
  pp.context_lens = Tensor(pctx.data(), DType::kInt32, {1});
  pp.block_tables = Tensor(ptable.data(), DType::kInt32, {1, 2});
  pp.slot_mapping = Tensor(pslots.data(), DType::kInt32, {5});
  pp.cache = p.cache;
  pp.shape = p.shape;
  pp.num_seqs = 1;
  pp.max_q_len = 5;
  pp.max_context_len = 3;
  EXPECT_EQ(Gpu(DeviceErrorCode::kPrefillQueries, 0, 5, 3), Cpu(cpu_.PrefillAttention(pp)));
}

TEST(DeviceErrorTest, NoneIsOkAndUnknownCodesAreInternal) {
  EXPECT_TRUE(DeviceErrorStatus(DeviceError{0, 0, 0, 0, 0}).ok());
  EXPECT_TRUE(absl::IsInternal(DeviceErrorStatus(DeviceError{99, 0, 0, 0, 0})));
  const absl::Status bound = DeviceErrorStatus(
      DeviceError{static_cast<int32_t>(DeviceErrorCode::kLaunchBound), 1, 3, 5000, 4096});
  EXPECT_EQ(bound.message(),
            "DecodeAttention: sequence 3 has a context of 5000 tokens, more than "
            "max_context_len = 4096");
}

TEST(DispatchTest, ServedShapesPassAndOthersAreRefusedByName) {
  for (int dim : {16, 32, 64, 96, 128}) {
    for (int bs : {16, 32}) EXPECT_TRUE(CheckServedAttentionShape(dim, bs).ok()) << dim << " " << bs;
  }
  for (int dim : {80, 48, 112, 256, 8, 0, -64}) {
    const absl::Status s = CheckServedAttentionShape(dim, 16);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << dim;
    EXPECT_EQ(s.message(), absl::StrCat("unsupported head_dim: ", dim,
                                        " (the CUDA backend serves 16, 32, 64, 96, 128)"));
  }
  const absl::Status s = CheckServedAttentionShape(128, 8);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(s.message(), "unsupported block_size: 8 (the CUDA backend serves 16, 32)");
}

TEST(DispatchTest, TheServedListAndTheSwitchAgree) {
  std::vector<int> switched;
  for (int dim = -1; dim <= 512; ++dim) {
    if (DispatchHeadDim(dim, [](auto) { return absl::OkStatus(); }).ok()) switched.push_back(dim);
  }
  EXPECT_EQ(switched, std::vector<int>(std::begin(kServedHeadDims), std::end(kServedHeadDims)));
}

TEST(DispatchTest, TheWarpLayoutRuleRefuses80) {
  // One lane per dim below 32, whole dims per lane above: 80 needs 40 lanes.
  static_assert(!IsAttentionHeadDim(80));
  static_assert(!IsAttentionHeadDim(48));
  static_assert(IsAttentionHeadDim(96));
  static_assert(IsAttentionHeadDim(16));
  for (int dim : kServedHeadDims) EXPECT_TRUE(IsAttentionHeadDim(dim)) << dim;
}

// --cuda_fast_kernels: all, none, or a list of names, each name of the
// list turning one kernel on; an unknown name is refused naming the list.
TEST(FastKernelsTest, ListsTurnOnExactlyTheirKernels) {
  const cuda::FastKernels all = cuda::FastKernels::All();
  EXPECT_EQ(all.ToString(),
            "flash_decode,prefill_mma,rope_kv_write,rmsnorm,gemv_small_m,gemv_silu_mul,"
            "gemm_skinny_mma,gemv_rmsnorm,pdl");
  EXPECT_EQ(cuda::FastKernels::None().ToString(), "none");
  for (const char* spec : {"all", "true"}) {
    absl::StatusOr<cuda::FastKernels> k = cuda::FastKernels::Parse(spec);
    ASSERT_TRUE(k.ok()) << spec;
    EXPECT_EQ(k->ToString(), all.ToString()) << spec;
  }
  absl::StatusOr<cuda::FastKernels> some = cuda::FastKernels::Parse(" gemm_skinny_mma , pdl ");
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_TRUE(some->gemm_skinny_mma);
  EXPECT_TRUE(some->pdl);
  EXPECT_FALSE(some->gemv_small_m);
  EXPECT_FALSE(some->gemv_rmsnorm);
  EXPECT_EQ(some->ToString(), "gemm_skinny_mma,pdl");
  absl::StatusOr<cuda::FastKernels> bad = cuda::FastKernels::Parse("flash_decode,gemv");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::AllOf(::testing::HasSubstr("\"gemv\""),
                               ::testing::HasSubstr("gemv_rmsnorm")));
}

TEST(CublasLtBucketTest, PowersOfTwoThen256Steps) {
  EXPECT_EQ(CublasLtGemm::BucketEnd(1), 1);
  EXPECT_EQ(CublasLtGemm::BucketEnd(2), 2);
  EXPECT_EQ(CublasLtGemm::BucketEnd(3), 4);
  EXPECT_EQ(CublasLtGemm::BucketEnd(33), 64);
  EXPECT_EQ(CublasLtGemm::BucketEnd(256), 256);
  EXPECT_EQ(CublasLtGemm::BucketEnd(257), 512);
  EXPECT_EQ(CublasLtGemm::BucketEnd(513), 768);
  EXPECT_EQ(CublasLtGemm::BucketEnd(8192), 8192);
  // Every M lies in its bucket, buckets tile 1.. without gaps or overlaps, and
  // a bucket is at most 256 wide (the per-M choice arrays stay small).
  int64_t expected_begin = 1;
  for (int64_t m = 1; m <= 20000; ++m) {
    const int64_t begin = CublasLtGemm::BucketBegin(m), end = CublasLtGemm::BucketEnd(m);
    ASSERT_LE(begin, m);
    ASSERT_GE(end, m);
    ASSERT_LE(end - begin + 1, 256);
    if (m == begin) {
      ASSERT_EQ(begin, expected_begin) << m;
      expected_begin = end + 1;
    }
  }
}

}  // namespace
}  // namespace kvserve::cuda
