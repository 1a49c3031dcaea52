// The sampling half of a step: collects each sampled row's parameters,
// uploads them for the backend's Sample op (fixed-size areas for the per-row
// values, a growing one for the penalties' sparse token lists) and brings the
// tokens and log-probabilities back in one copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/core/request.h"
#include "kernels/backend.h"

namespace kvserve {

/// How to pick the next token of one sequence in this step.
struct SamplingRow {
  float temperature = 0.f;
  int32_t top_k = 0;
  float top_p = 1.f;
  float min_p = 0.f;
  float uniform = 0.f;  // drawn from the request's own seeded RNG
  float repetition_penalty = 1.f;
  float presence_penalty = 0.f;
  float frequency_penalty = 0.f;
  // Borrowed from the request until the step ends (see TokenCounts).
  absl::Span<const int32_t> seen_tokens;
  absl::Span<const int32_t> seen_counts;
  absl::Span<const int32_t> banned_tokens;  // EOS and stop ids before min_new_tokens
  int32_t top_logprobs = -1;                // -1: no log-probabilities
  bool capture_logits = false;
};

class SamplingBatch {
 public:
  static absl::StatusOr<std::unique_ptr<SamplingBatch>> Create(Backend& backend, int max_seqs);

  void Clear();
  void Add(const SamplingRow& row);
  int size() const { return static_cast<int>(temperature_.size()); }
  bool capture_logits(int i) const { return capture_[i]; }
  bool any_capture() const;

  /// Uploads the rows' parameters; the result samples from `logits` [S, V].
  absl::StatusOr<SampleParams> Upload(Tensor logits);
  /// After Sample ran with `params`: each row's token, and its log-probabilities
  /// (an empty vector when no row asked for them).
  absl::Status Download(const SampleParams& params, std::vector<int32_t>& tokens,
                        std::vector<TokenLogprobs>& logprobs);

 private:
  SamplingBatch(Backend& backend, int max_seqs) : backend_(backend), max_seqs_(max_seqs) {}
  absl::Status ReserveListBuffer(size_t ints);

  Backend& backend_;
  int max_seqs_ = 0;
  DeviceBufferPtr params_buffer_;  // per-row inputs: 4-byte values, one copy up
  DeviceBufferPtr out_buffer_;     // outputs: tokens, logprobs, top ids; one copy down
  DeviceBufferPtr list_buffer_;    // seen tokens, seen counts, banned tokens (grows)
  size_t list_capacity_ = 0;       // int32s in list_buffer_

  // This step's rows; the vectors keep their capacity between steps.
  std::vector<float> temperature_, top_p_, min_p_, uniform_, repetition_, presence_, frequency_;
  std::vector<int32_t> top_k_, top_n_, seen_offsets_, banned_offsets_;
  std::vector<int32_t> seen_tokens_, seen_counts_, banned_tokens_;
  std::vector<bool> capture_;
  std::vector<uint32_t> host_params_, host_lists_, host_out_;  // staging, 4-byte words
};

}  // namespace kvserve
