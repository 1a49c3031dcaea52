// Continuous (iteration-level) batching. Each Schedule() call decides one
// model step:
//   1. running sequences, oldest first: each decode gets its one token, and
//      prompts being prefilled get the next chunk from the token budget that
//      is left after every decode has been counted, so a long prompt never
//      stalls running streams;
//   2. when a running sequence needs a block and none is free, the most
//      recently admitted running sequence is preempted: its blocks are freed,
//      its tokens kept, and it waits (ahead of newer arrivals) to be
//      recomputed;
//   3. if nothing was preempted, waiting sequences are admitted first come,
//      first served while max_num_seqs, the token budget and free blocks allow.
//      Paused sequences (Sequence::paused: the client is not reading) are
//      skipped in 1 and 3 and keep their blocks; they are the first victims,
//      newest first, when a running sequence needs a block, and give way to
//      a waiting sequence that does not fit.
//      With prefix caching on, an admitted sequence starts from the cached
//      blocks of its longest cached prefix and computes only the rest.
// Pure logic over the BlockManager: no model, no device, no clock.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "engine/core/schedule_output.h"
#include "engine/core/sequence.h"
#include "engine/kv/block_manager.h"

namespace kvserve {

struct SchedulerConfig {
  int max_num_seqs = 64;              // running sequences at once
  int max_num_batched_tokens = 1024;  // tokens per step (prefill chunks + decodes)
  /// Blocks kept free when admitting, so running sequences can grow a little
  /// before anyone is preempted.
  int admission_reserve_blocks = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockManager& blocks);

  /// Queues a new sequence at the back of the waiting line.
  void Add(std::unique_ptr<Sequence> seq);
  /// Plans the next model step. Everything the previous call scheduled for a
  /// still-running sequence is taken as computed (its full blocks become
  /// shareable), so after a failed step remove those sequences first.
  ScheduleOutput Schedule();
  /// Records the token sampled for `id` at the end of a step.
  void AppendToken(SeqId id, int32_t token);
  /// Removes a finished or aborted sequence in any state and frees its blocks
  /// (the next ScheduleOutput lists it as finished if the runner held it).
  void Remove(SeqId id);

  Sequence* Get(SeqId id);
  const Sequence* Get(SeqId id) const;
  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  /// Some sequence is not paused: Schedule() has something to compute.
  bool HasRunnableWork() const;
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  const std::vector<SeqId>& running() const { return running_; }
  const std::deque<SeqId>& waiting() const { return waiting_; }

 private:
  void Preempt(SeqId id, ScheduleOutput& out);
  void InsertWaitingInArrivalOrder(SeqId id);
  /// Admits `seq` (the caller takes it off the waiting line) with a chunk
  /// from `budget`, preempting paused sequences when blocks are short.
  /// False when it does not fit.
  bool TryAdmit(Sequence& seq, int& budget, ScheduleOutput& out);
  /// The most recently admitted paused running sequence (rend() if none):
  /// the first to give its blocks up.
  std::vector<SeqId>::const_reverse_iterator NewestPaused() const;
  /// Registers the sequence's blocks that are full and computed (by a step that ran).
  void CacheComputedBlocks(Sequence& seq);
  /// Fills out.new_seqs / out.cached_seqs for this step's chunks.
  void DescribeForRunner(ScheduleOutput& out);

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::map<SeqId, std::unique_ptr<Sequence>> seqs_;
  std::vector<SeqId> running_;  // admission order, oldest first
  std::deque<SeqId> waiting_;   // arrival order (SeqIds increase with arrival)
  std::vector<SeqId> finished_;  // removed while running, for the next ScheduleOutput
  std::vector<Sequence*> scheduled_;  // this Schedule()'s chunks' sequences, in order
};

}  // namespace kvserve
