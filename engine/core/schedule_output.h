// What the scheduler hands the model runner for one step. It stands alone:
// a sequence's data comes once, with its first step after (re-)admission
// (NewSequenceData), and as deltas afterwards (CachedSequenceData), so the
// runner keeps its own copy of every running sequence (RunnerState) and
// never reads the Scheduler or a Sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

#include "engine/core/sequence.h"
#include "engine/core/sequence_sampling.h"

namespace kvserve {

/// A slice of a sequence's tokens run through the model in this step.
struct ScheduledChunk {
  SeqId seq_id;
  int start;       // first token position
  int num_tokens;  // tokens [start, start + num_tokens)
  bool samples;    // the chunk reaches the last token: the step samples a new one
};

/// A sequence the runner does not hold yet: admitted for the first time, or
/// again after preemption (the runner dropped it then).
struct NewSequenceData {
  SeqId seq_id = 0;
  std::vector<int32_t> tokens;     // the prompt, then every token generated so far
  int prompt_len = 0;
  std::vector<int32_t> block_ids;  // its whole block table after this step's allocation
  int num_computed = 0;            // tokens whose K/V are in the cache before this step
  SequenceSampling sampling;
};

/// What changed since the step before for each scheduled sequence the runner
/// holds, as flat arrays (a decode step describes every running sequence:
/// one allocation per array, not per sequence). Entry i's lists are
/// [offsets[i], offsets[i + 1]) of the flat ones.
struct CachedSequenceData {
  std::vector<SeqId> seq_ids;
  std::vector<int32_t> num_computed;   // tokens in the cache before this step
  std::vector<int32_t> token_offsets;  // [n + 1] into new_token_ids
  std::vector<int32_t> new_token_ids;  // sampled since (normally the one of the last step)
  std::vector<int32_t> block_offsets;  // [n + 1] into new_block_ids
  std::vector<int32_t> new_block_ids;  // appended to its block table

  int size() const { return static_cast<int>(seq_ids.size()); }
  absl::Span<const int32_t> NewTokens(int i) const {
    return absl::MakeConstSpan(new_token_ids).subspan(token_offsets[i], token_offsets[i + 1] - token_offsets[i]);
  }
  absl::Span<const int32_t> NewBlocks(int i) const {
    return absl::MakeConstSpan(new_block_ids).subspan(block_offsets[i], block_offsets[i + 1] - block_offsets[i]);
  }
  /// Appends entry `id`; its new tokens and blocks are the given ranges.
  template <typename It>
  void Add(SeqId id, int computed, It tokens_begin, It tokens_end, It blocks_begin, It blocks_end) {
    if (seq_ids.empty()) {
      token_offsets.assign(1, 0);
      block_offsets.assign(1, 0);
    }
    seq_ids.push_back(id);
    num_computed.push_back(computed);
    new_token_ids.insert(new_token_ids.end(), tokens_begin, tokens_end);
    token_offsets.push_back(static_cast<int32_t>(new_token_ids.size()));
    new_block_ids.insert(new_block_ids.end(), blocks_begin, blocks_end);
    block_offsets.push_back(static_cast<int32_t>(new_block_ids.size()));
  }
};

struct ScheduleOutput {
  std::vector<ScheduledChunk> chunks;  // in running order
  std::vector<SeqId> admitted;         // newly admitted (or re-admitted) this step
  std::vector<SeqId> preempted;        // preempted this step: the runner drops them
  /// Removed (finished, stopped, aborted) since the previous step while the
  /// runner held them: the runner drops them first.
  std::vector<SeqId> finished;
  std::vector<NewSequenceData> new_seqs;        // for the admitted ones
  CachedSequenceData cached_seqs;               // for the other scheduled ones
  int num_batched_tokens = 0;
  /// Prefix caching, over the sequences admitted this step: tokens looked up
  /// and tokens found (their K/V reused, not computed).
  int prefix_cache_queried_tokens = 0;
  int prefix_cache_hit_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

}  // namespace kvserve
