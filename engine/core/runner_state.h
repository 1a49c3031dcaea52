// The model runner's own copy of every sequence it runs (vLLM's persistent
// input batch): tokens, block table row, computed count, sampling options,
// the seeded generator and the penalties' token counts. Built only from the
// ScheduleOutput messages (NewSequenceData once, CachedSequenceData deltas,
// finished / preempted ids), never from the Scheduler, so a step is
// self-contained. Rows are slots reused after a sequence leaves; the block
// table is one host array of fixed width [max_seqs, max_blocks_per_seq].
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/core/sampling_batch.h"
#include "engine/core/schedule_output.h"
#include "engine/core/token_counts.h"

namespace kvserve {

/// One running sequence as the runner knows it.
struct RunnerSequence {
  SeqId seq_id = 0;
  int row = 0;                  // its row in the block table
  std::vector<int32_t> tokens;  // prompt, then generated
  int prompt_len = 0;
  int num_computed = 0;  // tokens in the cache, this step's chunk included once applied
  int num_blocks = 0;    // columns of its block-table row in use
  SequenceSampling sampling;
  std::mt19937_64 rng;  // one draw per sampled token
  TokenCounts counts;   // for the penalties; empty without them
  /// Where its constraint stands (unused without one): ConstraintMasks
  /// replays the generated tokens into it before each sample.
  grammar::ConstraintMatcher matcher;

  int num_generated() const { return static_cast<int>(tokens.size()) - prompt_len; }
};

class RunnerState {
 public:
  RunnerState(int max_seqs, int max_blocks_per_seq);

  /// Applies one step's messages, then checks every chunk against what is
  /// held (known sequence, start at its computed count, tokens and blocks
  /// that cover it) and advances the computed counts. InternalError naming
  /// the sequence and the mismatch otherwise.
  absl::Status Apply(const ScheduleOutput& schedule);

  RunnerSequence* Find(SeqId id);
  const RunnerSequence* Find(SeqId id) const;
  /// The sequence's block ids (its used columns).
  absl::Span<const int32_t> BlockIds(const RunnerSequence& seq) const;
  /// Every row, max_blocks_per_seq columns each; unused entries are 0.
  const int32_t* block_table_row(int row) const { return &block_table_[size_t(row) * width_]; }
  int max_blocks_per_seq() const { return width_; }
  int num_sequences() const { return static_cast<int>(index_.size()); }
  std::vector<SeqId> sequence_ids() const;

  /// The next token's sampling row: draws the sequence's uniform, borrows its
  /// counts and banned ids (valid until the next Apply).
  SamplingRow NextSamplingRow(RunnerSequence& seq);

 private:
  absl::Status Add(const NewSequenceData& data);
  absl::Status Update(const CachedSequenceData& data, int i);
  void Drop(SeqId id);
  absl::Status AppendBlocks(RunnerSequence& seq, absl::Span<const int32_t> ids);

  int width_;
  std::vector<RunnerSequence> rows_;    // [max_seqs], reused by slot
  std::vector<int32_t> block_table_;    // [max_seqs, width_]
  std::vector<int> free_rows_;          // stack of unused rows
  absl::flat_hash_map<SeqId, int> index_;  // sequence → row
};

}  // namespace kvserve
