// One request's tokens and scheduling state, as the scheduler sees it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/sequence_sampling.h"
#include "engine/kv/block_manager.h"

namespace kvserve {

using SeqId = uint64_t;

enum class SequenceStatus {
  kWaiting,  // in the waiting line: never admitted, or preempted (blocks freed, tokens kept)
  kRunning,  // admitted: holds blocks, is prefilled or decoded each step
};

struct Sequence {
  Sequence(SeqId seq_id, std::vector<int32_t> prompt)
      : id(seq_id), tokens(std::move(prompt)), prompt_len(static_cast<int>(tokens.size())) {}

  SeqId id;
  std::vector<int32_t> tokens;  // prompt, then every generated token
  int prompt_len;
  /// Tokens whose K/V are in the cache (or scheduled into it this step).
  int num_computed = 0;
  BlockTable block_table;
  /// Prefix caching: chained hashes of the full blocks of `tokens` (extended
  /// as tokens grow), and how many leading blocks of `block_table` are
  /// registered in the cache.
  std::vector<BlockHash> block_hashes;
  int num_cached_blocks = 0;
  SequenceStatus status = SequenceStatus::kWaiting;
  int num_preemptions = 0;
  /// Its client is not reading (RequestSink::IsPaused, set by the engine
  /// before each Schedule): not scheduled nor admitted, blocks kept.
  bool paused = false;
  SequenceSampling sampling;  // handed to the model runner with the first step
  /// What the model runner has been told (ScheduleOutput's deltas start
  /// here); reset when it drops the sequence (preemption).
  int num_tokens_sent = 0;
  int num_blocks_sent = 0;

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  /// Tokens still to run through the model before the next sample.
  int num_uncomputed() const { return num_tokens() - num_computed; }
};

}  // namespace kvserve
