// One compiled constraint for one vocabulary, shared by every request that
// sends the same constraint (ConstraintCompiler caches them by content): the
// grammar's lazily built automaton and each visited state's token mask.
// Thread-safe: the automaton and the masks grow under one mutex, so requests
// on different engine threads can share it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/pushdown.h"
#include "engine/grammar/token_vocabulary.h"

namespace kvserve::grammar {

class CompiledConstraint {
 public:
  CompiledConstraint(std::shared_ptr<const Grammar> grammar,
                     std::shared_ptr<const TokenVocabulary> vocabulary, std::string description);

  /// What the request asked for, for logs ("json_schema (812 bytes)").
  const std::string& description() const { return description_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  int32_t Start() const { return start_; }
  /// The state after token `id` (its bytes), or kDeadState.
  int32_t AdvanceToken(int32_t state, int32_t id);
  int32_t AdvanceBytes(int32_t state, std::string_view bytes);
  bool Accepting(int32_t state);
  /// Nothing but the end can follow (the mask is the end tokens only).
  bool Complete(int32_t state);

  /// ORs the tokens allowed after `state` into words[0, vocabulary().mask_words()).
  /// The end tokens are not included: the caller adds them when Accepting.
  void OrMask(int32_t state, uint32_t* words);

  /// Computes the mask of `state` now, giving up (RESOURCE_EXHAUSTED) past
  /// `budget`: the compiler warms the start state's mask with it, so that a
  /// constraint too expensive to run is refused before it reaches the engine.
  absl::Status WarmMask(int32_t state, std::chrono::nanoseconds budget);

  size_t num_states();

 private:
  // Under mu_. Returns false when `deadline` passed first.
  bool ComputeMask(int32_t state, std::chrono::steady_clock::time_point deadline);

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::string description_;
  std::mutex mu_;
  Pushdown automaton_;
  int32_t start_;
  std::vector<std::unique_ptr<std::vector<uint32_t>>> masks_;  // by state, null until computed
  // At most this many masks are kept (16 MiB at a 128k vocabulary).
  static constexpr size_t kMaxCachedMasks = 1024;
  size_t cached_masks_ = 0;
};

/// One request's position in its constraint: the runner keeps one per
/// constrained sequence and replays the generated tokens into it, so it is
/// rebuilt exactly after a preemption.
struct ConstraintMatcher {
  std::shared_ptr<CompiledConstraint> constraint;
  int32_t state = kDeadState;
  int consumed = 0;    // generated tokens advanced over
  bool ended = false;  // an end token was taken where the grammar may end
};

}  // namespace kvserve::grammar
