// The requests a run sends: lengths drawn from the configured distributions
// (or read from a JSONL file), prompts of random token ids or random text.
// Deterministic for a seed, so two runs send the same requests.
#pragma once

#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "client/bench/bench_config.h"
#include "kvserve/v1/inference.pb.h"

namespace kvserve::bench {

struct PlannedRequest {
  v1::GenerateRequest request;
  int prompt_tokens = 0;  // token-id prompts: exact; text: an estimate
  int output_tokens = 0;  // max_new_tokens
};

class Workload {
 public:
  /// `vocab_size` bounds random token ids (from GetModelInfo).
  static absl::StatusOr<Workload> Create(const BenchConfig& config, int vocab_size,
                                         int max_context);
  /// The i-th request of the run (cycling through a prompts file).
  PlannedRequest Get(int64_t index) const;
  /// Prompts read from --prompts_file (0 without one).
  int num_file_prompts() const { return static_cast<int>(from_file_.size()); }

 private:
  int SampleLength(const LengthSpec& spec, std::mt19937_64& rng) const;

  BenchConfig config_;
  int vocab_size_ = 0;
  int max_context_ = 0;
  std::vector<PlannedRequest> from_file_;
};

}  // namespace kvserve::bench
