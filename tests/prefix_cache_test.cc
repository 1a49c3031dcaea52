// Prefix caching without a model: the chained block hashes, the index that
// proves a hit is the same prefix, the block manager's LRU of free-but-cached
// blocks (eviction order, ref counts while shared, the pool filling up), and
// the scheduler starting a sequence from its longest cached prefix.
#include <numeric>

#include "engine/core/scheduler.h"
#include "engine/kv/block_hash.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/prefix_cache_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr int kBlockSize = 4;

// Tokens first, first + 1, ...: distinct prompts for distinct `first`.
std::vector<int32_t> Tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<BlockHash> Hashes(const std::vector<int32_t>& tokens) {
  std::vector<BlockHash> hashes;
  ExtendBlockHashes(tokens, kBlockSize, hashes);
  return hashes;
}

// Allocates a table for `tokens` (from the cache where it can), registers
// every full block as computed and returns the table.
BlockTable RunSequence(BlockManager& bm, const std::vector<int32_t>& tokens) {
  const auto hashes = Hashes(tokens);
  const PrefixHit hit = bm.FindCachedPrefix(tokens, hashes);
  BlockTable table;
  EXPECT_TRUE(bm.CanAllocate(static_cast<int>(tokens.size()), 0, hit));
  bm.Allocate(table, static_cast<int>(tokens.size()), hit);
  bm.CacheFullBlocks(table, tokens, hashes, static_cast<int>(hit.blocks.size()),
                     static_cast<int>(tokens.size()));
  return table;
}

TEST(BlockHashTest, EachHashCoversItsBlockAndEverythingBefore) {
  const auto a = Tokens(14);  // 3 full blocks and 2 tokens: the partial block has no hash
  const auto ha = Hashes(a);
  ASSERT_EQ(ha.size(), 3u);
  EXPECT_EQ(Hashes(a), ha);  // deterministic

  auto b = a;
  b[5] = 7;  // block 1 differs: block 0 keeps its hash, blocks 1 and 2 change
  const auto hb = Hashes(b);
  EXPECT_EQ(hb[0], ha[0]);
  EXPECT_NE(hb[1], ha[1]);
  EXPECT_NE(hb[2], ha[2]);  // same tokens in block 2, another prefix

  // Extending covers only the new full blocks and keeps the old ones.
  std::vector<BlockHash> grown(ha.begin(), ha.begin() + 1);
  ExtendBlockHashes(a, kBlockSize, grown);
  EXPECT_EQ(grown, ha);
}

TEST(PrefixCacheIndexTest, AHitNeedsTheSameTokensAndTheSameParent) {
  PrefixCacheIndex index(8, kBlockSize);
  const auto x = Tokens(8, 100), y = Tokens(8, 500);
  const auto hx = Hashes(x);
  // A forged collision: block 0 holds y's tokens under x's hash.
  ASSERT_TRUE(index.Register(0, -1, hx[0], absl::MakeSpan(y).subspan(0, kBlockSize)));
  EXPECT_THAT(index.Match(x, hx, 2), IsEmpty()) << "tokens are compared on a hit";
  index.Forget(0);

  // Parent 1, child 2. Once the parent's content is replaced (forgotten and
  // registered again), the child no longer follows it, even under equal hashes.
  ASSERT_TRUE(index.Register(1, -1, hx[0], absl::MakeSpan(x).subspan(0, kBlockSize)));
  ASSERT_TRUE(index.Register(2, 1, hx[1], absl::MakeSpan(x).subspan(kBlockSize, kBlockSize)));
  EXPECT_THAT(index.Match(x, hx, 2), ElementsAre(1, 2));
  EXPECT_THAT(index.Match(x, hx, 1), ElementsAre(1)) << "max_blocks bounds the match";
  index.Forget(1);
  ASSERT_TRUE(index.Register(1, -1, hx[0], absl::MakeSpan(x).subspan(0, kBlockSize)));
  EXPECT_THAT(index.Match(x, hx, 2), ElementsAre(1)) << "the child's parent was overwritten since";

  // A child whose parent is not cached is not registered.
  EXPECT_FALSE(index.Register(3, 4, hx[1], absl::MakeSpan(x).subspan(kBlockSize, kBlockSize)));
}

TEST(PrefixCachingBlockManagerTest, FreedBlocksStayCachedAndAreReused) {
  BlockManager bm(8, kBlockSize, /*enable_prefix_caching=*/true);
  const auto prompt = Tokens(14);
  BlockTable a = RunSequence(bm, prompt);
  EXPECT_THAT(a, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(bm.num_cached_blocks(), 3);  // the partial block is not cached
  bm.Free(a);
  EXPECT_EQ(bm.num_free_blocks(), 8) << "cached blocks count as free";
  EXPECT_EQ(bm.num_used_blocks(), 0);
  EXPECT_EQ(bm.num_cached_blocks(), 3);

  // The same prompt again: three cached blocks, all taken from the free room.
  PrefixHit hit = bm.FindCachedPrefix(prompt, Hashes(prompt));
  EXPECT_THAT(hit.blocks, ElementsAre(0, 1, 2));
  EXPECT_EQ(hit.num_free, 3);
  // A prompt of exactly 3 blocks reuses only 2: its last token must be computed.
  const std::vector<int32_t> twelve(prompt.begin(), prompt.begin() + 12);
  EXPECT_THAT(bm.FindCachedPrefix(twelve, Hashes(twelve)).blocks, ElementsAre(0, 1));
  // Another prompt shares nothing.
  EXPECT_TRUE(bm.FindCachedPrefix(Tokens(14, 900), Hashes(Tokens(14, 900))).empty());

  BlockTable b;
  bm.Allocate(b, 14, hit);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[2], 2);
  EXPECT_EQ(bm.num_used_blocks(), 4);
  bm.Free(b);
  EXPECT_EQ(bm.num_used_blocks(), 0);
}

TEST(PrefixCachingBlockManagerTest, SharedBlocksAreRefCounted) {
  BlockManager bm(8, kBlockSize, true);
  const auto prompt = Tokens(10);
  BlockTable a = RunSequence(bm, prompt);  // blocks 0, 1 cached, 2 partial
  const PrefixHit hit = bm.FindCachedPrefix(prompt, Hashes(prompt));
  EXPECT_THAT(hit.blocks, ElementsAre(0, 1));
  EXPECT_EQ(hit.num_free, 0) << "a still holds them";
  BlockTable b;
  ASSERT_TRUE(bm.CanAllocate(10, 0, hit));
  bm.Allocate(b, 10, hit);
  EXPECT_THAT(b, ElementsAre(0, 1, 3));  // its own partial block
  EXPECT_EQ(bm.ref_count(0), 2);
  EXPECT_EQ(bm.num_used_blocks(), 4);
  bm.Free(a);
  EXPECT_EQ(bm.ref_count(0), 1);
  EXPECT_EQ(bm.num_used_blocks(), 3) << "b keeps the shared blocks and its own";
  bm.Free(b);
  EXPECT_EQ(bm.num_used_blocks(), 0);
  EXPECT_EQ(bm.num_cached_blocks(), 2);
}

TEST(PrefixCachingBlockManagerTest, EvictsNeverCachedFirstThenLeastRecentlyFreedTailFirst) {
  BlockManager bm(4, kBlockSize, true);
  const auto a = Tokens(8, 100), b = Tokens(8, 200);
  BlockTable ta = RunSequence(bm, a);  // blocks 0, 1
  BlockTable tb = RunSequence(bm, b);  // blocks 2, 3
  bm.Free(ta);                         // LRU: 1, 0 (a's tail first)
  bm.Free(tb);                         // LRU: 1, 0, 3, 2
  EXPECT_EQ(bm.num_free_blocks(), 4);

  BlockTable t;
  bm.Allocate(t, 4);  // evicts block 1, a's tail
  EXPECT_THAT(t, ElementsAre(1));
  const auto a9 = Tokens(9, 100);
  EXPECT_THAT(bm.FindCachedPrefix(a9, Hashes(a9)).blocks, ElementsAre(0));
  bm.Append(t, 8);  // evicts block 0
  EXPECT_THAT(t, ElementsAre(1, 0));
  EXPECT_TRUE(bm.FindCachedPrefix(a9, Hashes(a9)).empty());
  const auto b9 = Tokens(9, 200);
  EXPECT_THAT(bm.FindCachedPrefix(b9, Hashes(b9)).blocks, ElementsAre(2, 3)) << "b untouched";
  EXPECT_EQ(bm.num_cached_blocks(), 2);

  // Freed blocks that were never cached are handed out before cached ones.
  bm.Free(t);  // 1 and 0 hold no registered content now
  BlockTable u;
  bm.Allocate(u, 8);
  EXPECT_THAT(u, ElementsAre(1, 0));
  EXPECT_EQ(bm.num_cached_blocks(), 2);
  bm.Free(u);
}

TEST(PrefixCachingBlockManagerTest, AFullPoolOfCachedBlocksIsAllAllocatable) {
  BlockManager bm(6, kBlockSize, true);
  for (int s = 0; s < 3; ++s) {
    BlockTable t = RunSequence(bm, Tokens(8, 100 * (s + 1)));
    bm.Free(t);
  }
  EXPECT_EQ(bm.num_cached_blocks(), 6);
  ASSERT_TRUE(bm.CanAllocate(24));
  EXPECT_FALSE(bm.CanAllocate(25));
  BlockTable all;
  bm.Allocate(all, 24);
  EXPECT_EQ(bm.num_free_blocks(), 0);
  EXPECT_EQ(bm.num_cached_blocks(), 0) << "every cached block was evicted";
  bm.Free(all);
  EXPECT_EQ(bm.num_used_blocks(), 0);
}

TEST(PrefixCachingBlockManagerTest, ATwinBlockStaysPrivate) {
  BlockManager bm(8, kBlockSize, true);
  const auto prompt = Tokens(8);
  BlockTable a, b;
  bm.Allocate(a, 8);
  bm.Allocate(b, 8);  // computed at the same time as a: no hit yet
  EXPECT_EQ(bm.CacheFullBlocks(a, prompt, Hashes(prompt), 0, 8), 2);
  EXPECT_EQ(bm.CacheFullBlocks(b, prompt, Hashes(prompt), 0, 8), 0);
  bm.Free(b);  // back to the never-cached free list
  bm.Free(a);
  EXPECT_EQ(bm.num_cached_blocks(), 2);
  EXPECT_EQ(bm.num_free_blocks(), 8);
}

TEST(PrefixCachingBlockManagerTest, OffMeansNoHitsAndNoRegistrations) {
  BlockManager bm(8, kBlockSize, false);
  const auto prompt = Tokens(12);
  BlockTable a = RunSequence(bm, prompt);
  bm.Free(a);
  EXPECT_EQ(bm.num_cached_blocks(), 0);
  EXPECT_TRUE(bm.FindCachedPrefix(prompt, Hashes(prompt)).empty());
}

// The scheduler: a sequence's first chunk starts after its cached prefix.
class PrefixCachingSchedulerTest : public ::testing::Test {
 protected:
  PrefixCachingSchedulerTest() : blocks_(16, kBlockSize, true), scheduler_(Config(), blocks_) {}
  static SchedulerConfig Config() {
    SchedulerConfig c;
    c.max_num_seqs = 4;
    c.max_num_batched_tokens = 64;
    return c;
  }
  // Runs `id` with `prompt` alone until it has `new_tokens` tokens, then
  // removes it; returns the start of its first chunk.
  int Run(SeqId id, std::vector<int32_t> prompt, int new_tokens, int* hit_tokens = nullptr) {
    scheduler_.Add(std::make_unique<Sequence>(id, std::move(prompt)));
    int first_start = -1;
    for (int generated = 0; generated < new_tokens;) {
      ScheduleOutput out = scheduler_.Schedule();
      EXPECT_EQ(out.chunks.size(), 1u);
      if (first_start < 0) {
        first_start = out.chunks[0].start;
        if (hit_tokens) *hit_tokens = out.prefix_cache_hit_tokens;
      }
      if (out.chunks[0].samples) {
        scheduler_.AppendToken(id, 1000 + generated);
        ++generated;
      }
    }
    scheduler_.Remove(id);
    return first_start;
  }
  BlockManager blocks_;
  Scheduler scheduler_;
};

TEST_F(PrefixCachingSchedulerTest, ASecondRequestComputesOnlyItsSuffix) {
  const auto system = Tokens(10);
  auto with = [&](std::vector<int32_t> suffix) {
    auto p = system;
    p.insert(p.end(), suffix.begin(), suffix.end());
    return p;
  };
  int hits = -1;
  EXPECT_EQ(Run(1, with({1, 2, 3}), 3, &hits), 0);
  EXPECT_EQ(hits, 0);
  EXPECT_EQ(Run(2, with({4, 5, 6}), 3, &hits), 8) << "the 2 full blocks of the shared 10 tokens";
  EXPECT_EQ(hits, 8);
  // The first request's generated tokens were cached too: 13 + 2 computed = 15 tokens.
  EXPECT_EQ(Run(3, with({1, 2, 3, 1000, 1001, 7}), 1), 12);
  EXPECT_EQ(Run(4, Tokens(12, 100), 1), 8) << "the last token is always computed";
  EXPECT_EQ(blocks_.num_used_blocks(), 0);
}

TEST_F(PrefixCachingSchedulerTest, ARunningSequencesBlocksAreSharedOnceComputed) {
  auto prompt = Tokens(9);
  scheduler_.Add(std::make_unique<Sequence>(1, prompt));
  scheduler_.Add(std::make_unique<Sequence>(2, prompt));  // same step: nothing computed yet
  ScheduleOutput out = scheduler_.Schedule();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].start, 0) << "blocks being computed in this step are not shared";
  for (const ScheduledChunk& c : out.chunks) scheduler_.AppendToken(c.seq_id, 7);
  // 1's blocks were registered (first); 2's twins stay private.
  scheduler_.Add(std::make_unique<Sequence>(3, prompt));
  out = scheduler_.Schedule();
  ASSERT_EQ(out.chunks.size(), 3u);
  EXPECT_EQ(out.chunks[2].seq_id, 3u);
  EXPECT_EQ(out.chunks[2].start, 8);
  EXPECT_EQ(out.prefix_cache_hit_tokens, 8);
  const Sequence& s1 = *scheduler_.Get(1);
  const Sequence& s3 = *scheduler_.Get(3);
  EXPECT_EQ(s3.block_table[0], s1.block_table[0]);
  EXPECT_EQ(blocks_.ref_count(s1.block_table[1]), 2);
  EXPECT_NE(s3.block_table[2], s1.block_table[2]) << "the partial block is its own";
  for (SeqId id : {1, 2, 3}) scheduler_.Remove(id);
  EXPECT_EQ(blocks_.num_used_blocks(), 0);
}

TEST_F(PrefixCachingSchedulerTest, APreemptedSequenceResumesFromItsCachedBlocks) {
  // Two sequences in a pool too small for both: the newer one is preempted,
  // and when readmitted it reuses its own blocks instead of recomputing.
  BlockManager blocks(5, kBlockSize, true);
  Scheduler scheduler(Config(), blocks);
  scheduler.Add(std::make_unique<Sequence>(1, Tokens(8, 100)));
  scheduler.Add(std::make_unique<Sequence>(2, Tokens(8, 200)));
  ScheduleOutput out = scheduler.Schedule();  // both prefilled: 4 blocks
  ASSERT_EQ(out.chunks.size(), 2u);
  int tokens1 = 0;
  std::vector<ScheduledChunk> readmitted;
  for (int step = 0; step < 12 && readmitted.empty(); ++step) {
    for (const ScheduledChunk& c : out.chunks) {
      if (c.samples) scheduler.AppendToken(c.seq_id, 7);
    }
    out = scheduler.Schedule();
    for (const ScheduledChunk& c : out.chunks) {
      if (c.seq_id == 2 && c.start > 0 && !out.admitted.empty()) readmitted.push_back(c);
      tokens1 += c.seq_id == 1;
    }
    if (!out.preempted.empty()) {
      EXPECT_THAT(out.preempted, ElementsAre(2));
      scheduler.Remove(1);  // 1 finishes: room for 2 again
      out = scheduler.Schedule();
      for (const ScheduledChunk& c : out.chunks) {
        if (c.seq_id == 2) readmitted.push_back(c);
      }
    }
  }
  ASSERT_EQ(readmitted.size(), 1u);
  EXPECT_GE(readmitted[0].start, 8) << "its prompt blocks came back from the cache";
  scheduler.Remove(2);
  EXPECT_EQ(blocks.num_used_blocks(), 0);
}

}  // namespace
}  // namespace kvserve
