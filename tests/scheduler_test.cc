// The scheduler alone (no model), step by step: each row of a table is one
// Schedule() call and the state expected after it. A step "runs" by
// appending a token to every sequence whose chunk samples.
#include "engine/core/scheduler.h"

#include <deque>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve {
namespace {

using ::testing::ElementsAreArray;

struct Chunk {
  SeqId id;
  int start, tokens;
  bool samples;
  bool operator==(const Chunk& o) const {
    return id == o.id && start == o.start && tokens == o.tokens && samples == o.samples;
  }
};
std::ostream& operator<<(std::ostream& os, const Chunk& c) {
  return os << "{seq " << c.id << " [" << c.start << ", +" << c.tokens << ")" << (c.samples ? " samples" : "") << "}";
}

struct ExpectedStep {
  std::vector<Chunk> chunks;
  std::vector<SeqId> admitted;
  std::vector<SeqId> preempted;
  std::vector<SeqId> running;  // after the step
  std::vector<SeqId> waiting;
  int free_blocks;
  std::vector<SeqId> finish_after = {};  // removed once the step ran
};

class SchedulerHarness {
 public:
  SchedulerHarness(int num_blocks, int block_size, SchedulerConfig config)
      : blocks_(num_blocks, block_size), scheduler_(config, blocks_) {}

  void Add(SeqId id, int prompt_len) {
    scheduler_.Add(std::make_unique<Sequence>(id, std::vector<int32_t>(prompt_len, 7)));
  }

  void RunTable(const std::vector<ExpectedStep>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i + 1));
      const ExpectedStep& want = steps[i];
      ScheduleOutput out = scheduler_.Schedule();
      std::vector<Chunk> chunks;
      for (const ScheduledChunk& c : out.chunks) chunks.push_back({c.seq_id, c.start, c.num_tokens, c.samples});
      EXPECT_THAT(chunks, ElementsAreArray(want.chunks));
      EXPECT_THAT(out.admitted, ElementsAreArray(want.admitted));
      EXPECT_THAT(out.preempted, ElementsAreArray(want.preempted));
      for (const ScheduledChunk& c : out.chunks) {
        if (c.samples) scheduler_.AppendToken(c.seq_id, 100);
      }
      EXPECT_THAT(scheduler_.running(), ElementsAreArray(want.running));
      EXPECT_THAT(std::vector<SeqId>(scheduler_.waiting().begin(), scheduler_.waiting().end()),
                  ElementsAreArray(want.waiting));
      EXPECT_EQ(blocks_.num_free_blocks(), want.free_blocks);
      for (SeqId id : want.finish_after) scheduler_.Remove(id);
    }
  }

  /// What the engine does before each step from the request's sink.
  void SetPaused(SeqId id, bool paused) { scheduler_.Get(id)->paused = paused; }

  BlockManager& blocks() { return blocks_; }
  Scheduler& scheduler() { return scheduler_; }

 private:
  BlockManager blocks_;
  Scheduler scheduler_;
};

SchedulerConfig Config(int max_seqs, int max_tokens) {
  SchedulerConfig c;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = max_tokens;
  return c;
}

TEST(SchedulerTest, AdmitsFirstComeFirstServedUpToMaxNumSeqs) {
  SchedulerHarness h(/*blocks=*/16, /*block_size=*/4, Config(2, 64));
  h.Add(1, 5);
  h.Add(2, 3);
  h.Add(3, 4);
  h.RunTable({
      // 1 and 2 admitted whole (2 + 1 blocks); 3 waits for a sequence slot.
      {{{1, 0, 5, true}, {2, 0, 3, true}}, {1, 2}, {}, {1, 2}, {3}, 13},
      // Decodes: 1 at position 5 (still 2 blocks), 2 at position 3 (1 block). 1 then finishes.
      {{{1, 5, 1, true}, {2, 3, 1, true}}, {}, {}, {1, 2}, {3}, 13, {1}},
      // 1's 2 blocks are back; 2 grows to a second block; 3 is admitted.
      {{{2, 4, 1, true}, {3, 0, 4, true}}, {3}, {}, {2, 3}, {}, 13},
  });
}

TEST(SchedulerTest, LongPromptIsChunkedAroundRunningDecodes) {
  SchedulerHarness h(64, 4, Config(4, 8));
  h.Add(1, 2);
  h.Add(2, 20);
  h.RunTable({
      // Budget 8: 1's whole prompt (2), then 6 tokens of 2's prompt.
      {{{1, 0, 2, true}, {2, 0, 6, false}}, {1, 2}, {}, {1, 2}, {}, 64 - 1 - 2},
      // 1 decodes; 2 gets the 7 tokens left after that decode.
      {{{1, 2, 1, true}, {2, 6, 7, false}}, {}, {}, {1, 2}, {}, 64 - 1 - 4},
      {{{1, 3, 1, true}, {2, 13, 7, true}}, {}, {}, {1, 2}, {}, 64 - 1 - 5},
      // Both decode now.
      {{{1, 4, 1, true}, {2, 20, 1, true}}, {}, {}, {1, 2}, {}, 64 - 2 - 6},
  });
}

TEST(SchedulerTest, WaitingRequestsJoinWhenALongPrefillLeavesBudget) {
  // A long prompt admitted first takes whole chunks; short requests behind it
  // join in the step where its last chunk leaves budget, and from then on the
  // decodes come first.
  SchedulerHarness h(64, 16, Config(4, 10));
  h.Add(1, 25);
  h.Add(2, 1);
  h.Add(3, 1);
  h.RunTable({
      {{{1, 0, 10, false}}, {1}, {}, {1}, {2, 3}, 63},
      {{{1, 10, 10, false}}, {}, {}, {1}, {2, 3}, 62},
      {{{1, 20, 5, true}, {2, 0, 1, true}, {3, 0, 1, true}}, {2, 3}, {}, {1, 2, 3}, {}, 60},
      {{{1, 25, 1, true}, {2, 1, 1, true}, {3, 1, 1, true}}, {}, {}, {1, 2, 3}, {}, 60},
  });
}

TEST(SchedulerTest, PrefillChunkTakesTheBudgetLeftAfterDecodes) {
  SchedulerHarness h(64, 16, Config(4, 10));
  h.Add(2, 1);
  h.Add(3, 1);
  h.Add(1, 40);
  h.RunTable({
      {{{2, 0, 1, true}, {3, 0, 1, true}, {1, 0, 8, false}}, {2, 3, 1}, {}, {2, 3, 1}, {}, 61},
      {{{2, 1, 1, true}, {3, 1, 1, true}, {1, 8, 8, false}}, {}, {}, {2, 3, 1}, {}, 61},
  });
}

TEST(SchedulerTest, PreemptsTheMostRecentlyAdmittedWhenBlocksRunOut) {
  // 4 blocks of 4 tokens. Two 7-token prompts fill the pool.
  SchedulerHarness h(4, 4, Config(4, 64));
  h.Add(1, 7);
  h.Add(2, 7);
  h.RunTable({
      {{{1, 0, 7, true}, {2, 0, 7, true}}, {1, 2}, {}, {1, 2}, {}, 0},
      // Position 7 still fits both second blocks.
      {{{1, 7, 1, true}, {2, 7, 1, true}}, {}, {}, {1, 2}, {}, 0},
      // 1 needs a third block: 2 (admitted last) is preempted, its blocks freed.
      {{{1, 8, 1, true}}, {}, {2}, {1}, {2}, 1},
      // No admission while 2 needs 3 blocks (9 tokens) and 1 holds 3.
      {{{1, 9, 1, true}}, {}, {}, {1}, {2}, 1, {1}},
      // 1 finished: 2 is re-admitted and recomputes all 9 tokens, then samples.
      {{{2, 0, 9, true}}, {2}, {}, {2}, {}, 1},
  });
  EXPECT_EQ(h.scheduler().Get(2)->num_preemptions, 1);
  EXPECT_EQ(h.scheduler().Get(2)->num_tokens(), 10);
}

TEST(SchedulerTest, ASequenceThatCannotGrowPreemptsItselfWhenNewest) {
  // 3 blocks of 4: 1 holds 2 blocks with room to grow, 2 holds a full block.
  SchedulerHarness h(3, 4, Config(4, 64));
  h.Add(1, 6);
  h.Add(2, 4);
  h.RunTable({
      {{{1, 0, 6, true}, {2, 0, 4, true}}, {1, 2}, {}, {1, 2}, {}, 0},
      // 1 decodes in its own room; 2 needs a block, is the newest, and goes.
      {{{1, 6, 1, true}}, {}, {2}, {1}, {2}, 1},
  });
}

TEST(SchedulerTest, PromptChunkShrinksToTheRoomLeftBeforeAnyoneIsPreempted) {
  // 5 blocks of 4, budget 7: 2 decodes while 1 (16 tokens) is prefilled.
  SchedulerHarness h(5, 4, Config(4, 7));
  h.Add(2, 3);
  h.Add(1, 16);
  h.RunTable({
      {{{2, 0, 3, true}, {1, 0, 4, false}}, {2, 1}, {}, {2, 1}, {}, 3},
      {{{2, 3, 1, true}, {1, 4, 6, false}}, {}, {}, {2, 1}, {}, 1},
      // 2 takes the last free block; 1 wants 6 more tokens but its blocks hold
      // only 2 more: the chunk shrinks to 2 instead of preempting anyone.
      {{{2, 4, 1, true}, {1, 10, 2, false}}, {}, {}, {2, 1}, {}, 0},
      // Now 1 has no room at all and is the newest: it is preempted.
      {{{2, 5, 1, true}}, {}, {1}, {2}, {1}, 3},
  });
}

TEST(SchedulerTest, RemoveFreesBlocksInEveryState) {
  SchedulerHarness h(16, 4, Config(2, 6));
  h.Add(1, 10);  // prefilled over two steps
  h.Add(2, 3);
  h.Add(3, 3);   // waits: max_num_seqs = 2
  h.RunTable({{{{1, 0, 6, false}}, {1}, {}, {1}, {2, 3}, 14}});
  // Mid-prefill and waiting sequences are removed; blocks come back.
  h.scheduler().Remove(1);
  h.scheduler().Remove(3);
  EXPECT_EQ(h.blocks().num_free_blocks(), 16);
  h.RunTable({{{{2, 0, 3, true}}, {2}, {}, {2}, {}, 15}});
  h.scheduler().Remove(2);
  EXPECT_EQ(h.blocks().num_free_blocks(), 16);
  EXPECT_FALSE(h.scheduler().HasWork());
}

TEST(SchedulerTest, AdmissionKeepsTheReserveOnlyWhileOthersRun) {
  SchedulerConfig config = Config(4, 64);
  config.admission_reserve_blocks = 2;
  SchedulerHarness h(4, 4, config);
  h.Add(1, 16);  // needs all 4 blocks: allowed, nobody else runs
  h.RunTable({{{{1, 0, 16, true}}, {1}, {}, {1}, {}, 0, {1}}});
  h.Add(2, 4);
  h.Add(3, 4);
  h.Add(4, 4);
  // 2 takes a block alone (no reserve); 3 takes one while 2 runs (1 + 2
  // reserve <= 3 free); 4 is refused: 1 + 2 reserve > the 2 left.
  h.RunTable({{{{2, 0, 4, true}, {3, 0, 4, true}}, {2, 3}, {}, {2, 3}, {4}, 2}});
  // 3 finishes (3 free), but 2 grows into a second block first: 2 left, and 4
  // still waits for the reserve.
  h.scheduler().Remove(3);
  h.RunTable({{{{2, 4, 1, true}}, {}, {}, {2}, {4}, 2}});
  // With 2 gone, 4 is admitted. (Step 1 showed a sequence alone using the reserve.)
  h.scheduler().Remove(2);
  h.RunTable({{{{4, 0, 4, true}}, {4}, {}, {4}, {}, 3}});
}

TEST(SchedulerTest, PausedSequenceIsNotScheduledKeepsItsBlocksAndResumes) {
  SchedulerHarness h(16, 4, Config(4, 64));
  h.Add(1, 5);
  h.Add(2, 3);
  h.RunTable({{{{1, 0, 5, true}, {2, 0, 3, true}}, {1, 2}, {}, {1, 2}, {}, 13}});
  h.SetPaused(1, true);
  // 1 holds its 2 blocks and computes nothing; 2 goes on into a second block.
  h.RunTable({
      {{{2, 3, 1, true}}, {}, {}, {1, 2}, {}, 13},
      {{{2, 4, 1, true}}, {}, {}, {1, 2}, {}, 12},
  });
  EXPECT_TRUE(h.scheduler().HasRunnableWork());
  h.SetPaused(2, true);
  EXPECT_FALSE(h.scheduler().HasRunnableWork());
  EXPECT_TRUE(h.scheduler().HasWork());
  h.RunTable({{{}, {}, {}, {1, 2}, {}, 12}});  // an empty step: nothing to compute, nothing freed
  h.SetPaused(1, false);
  // 1 resumes where it stopped: its one sampled token is decoded at position 5.
  h.RunTable({{{{1, 5, 1, true}}, {}, {}, {1, 2}, {}, 12}});
  EXPECT_EQ(h.scheduler().Get(1)->num_tokens(), 7);
  EXPECT_EQ(h.scheduler().Get(2)->num_tokens(), 6);
}

TEST(SchedulerTest, PausedSequencesAreTheFirstToGiveUpTheirBlocks) {
  // As in PreemptsTheMostRecentlyAdmittedWhenBlocksRunOut, but the older
  // sequence's client stopped reading: it goes instead of the newest.
  SchedulerHarness h(4, 4, Config(4, 64));
  h.Add(1, 7);
  h.Add(2, 7);
  h.RunTable({{{{1, 0, 7, true}, {2, 0, 7, true}}, {1, 2}, {}, {1, 2}, {}, 0}});
  h.SetPaused(1, true);
  h.RunTable({
      {{{2, 7, 1, true}}, {}, {}, {1, 2}, {}, 0},
      // 2 needs a third block: paused 1 is preempted, not 2.
      {{{2, 8, 1, true}}, {}, {1}, {2}, {1}, 1},
      {{{2, 9, 1, true}}, {}, {}, {2}, {1}, 1, {2}},
      // Still paused: not admitted although its 2 blocks are free.
      {{}, {}, {}, {}, {1}, 4},
  });
  h.SetPaused(1, false);
  // Resumed: recomputes its 8 tokens and samples the next.
  h.RunTable({{{{1, 0, 8, true}}, {1}, {}, {1}, {}, 2}});
  EXPECT_EQ(h.scheduler().Get(1)->num_preemptions, 1);
}

TEST(SchedulerTest, AWaitingSequenceTakesThePausedSequencesBlocks) {
  SchedulerHarness h(4, 4, Config(4, 64));
  h.Add(1, 16);  // all 4 blocks
  h.RunTable({{{{1, 0, 16, true}}, {1}, {}, {1}, {}, 0}});
  h.SetPaused(1, true);
  h.Add(2, 4);
  // Without the pause, 2 would wait for 1 to finish; paused, 1 gives way.
  h.RunTable({{{{2, 0, 4, true}}, {2}, {1}, {2}, {1}, 3}});
}

TEST(BlockManagerTest, AllocateAppendShareFree) {
  BlockManager bm(4, 16);
  EXPECT_EQ(bm.BlocksFor(0), 0);
  EXPECT_EQ(bm.BlocksFor(16), 1);
  EXPECT_EQ(bm.BlocksFor(17), 2);
  BlockTable a;
  ASSERT_TRUE(bm.CanAllocate(17));
  bm.Allocate(a, 17);
  EXPECT_THAT(a, ElementsAreArray({0, 1}));
  EXPECT_TRUE(bm.CanAppend(a, 64));
  EXPECT_FALSE(bm.CanAppend(a, 65));
  bm.Append(a, 33);
  EXPECT_EQ(a.size(), 3u);
  BlockTable b = bm.Share(a);
  EXPECT_EQ(bm.ref_count(a[0]), 2);
  bm.Free(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(bm.num_free_blocks(), 1);  // b still holds the three
  bm.Free(b);
  EXPECT_EQ(bm.num_free_blocks(), 4);
  EXPECT_FALSE(bm.CanAllocate(65));
  EXPECT_TRUE(bm.CanAllocate(64));
  EXPECT_FALSE(bm.CanAllocate(64, /*reserve=*/1));
}

}  // namespace
}  // namespace kvserve
