// How one sequence picks its tokens: fixed when the request is admitted, so
// the scheduler can hand it to the model runner once, with the sequence's
// first step (NewSequenceData), and the runner samples without asking the
// engine again.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/request.h"

namespace kvserve {

struct SequenceSampling {
  SamplingOptions options;  // options.seed is not used: `seed` is the one in effect
  /// The request's seed, or the random one the engine drew for it. Each
  /// sampled token takes exactly one draw of std::mt19937_64(seed), so the
  /// runner rebuilds the generator of a resumed sequence by skipping one
  /// draw per generated token.
  uint64_t seed = 0;
  /// EOS and stop ids, masked while fewer than options.min_new_tokens are generated.
  std::vector<int32_t> banned_tokens;
  bool capture_logits = false;
  /// Structured output (Request::constraint), and the ids that end the
  /// output where the constraint may end (EOS and stop token ids).
  std::shared_ptr<grammar::CompiledConstraint> constraint;
  std::vector<int32_t> end_tokens;
};

}  // namespace kvserve
