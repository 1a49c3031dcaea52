// Turns one ScheduleOutput into a StepBatch on the device, runs the model and
// samples. The step is self-contained: the runner applies the schedule's
// messages to its own RunnerState and reads nothing else. Host metadata goes up in one copy, the sampling parameters in one
// or two (SamplingBatch), sampled ids and log-probabilities come back in one.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/constraint_masks.h"
#include "engine/core/decode_buckets.h"
#include "engine/core/runner_state.h"
#include "engine/core/sampling_batch.h"
#include "engine/core/schedule_output.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/model.h"

namespace kvserve {

/// Where a step's host time went (steady clock), for the host-overhead
/// benchmark: metadata and sampling rows built and copied up; the model's
/// ops issued (on an asynchronous device, not finished); sampling issued and
/// its results copied back.
struct StepPhaseTimes {
  std::chrono::nanoseconds prepare{0}, execute{0}, sample{0};
};

struct StepResult {
  std::vector<SeqId> seq_ids;   // sequences that sampled, in batch order
  std::vector<int32_t> tokens;  // their new tokens
  std::vector<std::vector<float>> logits;  // per sampled row; empty unless captured
  std::vector<TokenLogprobs> logprobs;     // per sampled row; empty unless asked for
  int num_tokens = 0;  // scheduled tokens run through the model (padding not counted)
  int padded_batch = 0;  // a decode step's bucket size; 0 for a packed (prefill or mixed) step
  StepPhaseTimes times;
};

class ModelRunner {
 public:
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(Backend& backend, Model& model,
                                                             KvCache& cache, int max_tokens,
                                                             int max_seqs);

  /// Applies `schedule` to the runner's state, runs the model and samples.
  absl::StatusOr<StepResult> Run(const ScheduleOutput& schedule);

  /// The runner's view of the sequences it holds (for consistency checks).
  const RunnerState& state() const { return *state_; }

 private:
  ModelRunner(Backend& backend, Model& model, KvCache& cache)
      : backend_(backend), model_(model), cache_(cache) {}

  // Run's phases, in order. PrepareInputs applies the schedule to state_,
  // builds the step's metadata into batch_ and copies it up (and collects the
  // sampled rows' parameters): a step of one-token chunks only is padded to
  // its decode bucket (fixed layout, PrepareDecodeBucket), any other packed
  // (PreparePacked). Execute runs the model (replaying the bucket's graph on
  // a backend that records them); Sample issues sampling on the logits;
  // CopyOut brings the tokens and log-probabilities back.
  absl::Status PrepareInputs(const ScheduleOutput& schedule, StepResult& result);
  absl::Status PreparePacked(const ScheduleOutput& schedule, StepResult& result);
  absl::Status PrepareDecodeBucket(const ScheduleOutput& schedule, StepResult& result);
  absl::StatusOr<Tensor> Execute();
  absl::StatusOr<SampleParams> Sample(Tensor logits, StepResult& result);
  absl::Status CopyOut(const SampleParams& params, StepResult& result);

  Backend& backend_;
  Model& model_;
  KvCache& cache_;
  int max_tokens_ = 0;
  int max_seqs_ = 0;
  int max_blocks_per_seq_ = 0;
  // Device staging for the step's metadata (the sampling's is in sampling_).
  DeviceBufferPtr int_buffer_;
  std::vector<int32_t> host_ints_;
  std::unique_ptr<SamplingBatch> sampling_;
  std::unique_ptr<ConstraintMasks> masks_;
  std::unique_ptr<RunnerState> state_;
  std::unique_ptr<DecodeBuckets> buckets_;
  int bucket_ = -1;  // this step's index in buckets_->all(), or -1 (packed)
  // Backend graphs (Backend::SupportsGraphs): one per bucket, recorded on the
  // bucket's first step; the logits it writes are at the same place each replay.
  bool use_graphs_ = false;
  struct BucketGraph {
    bool captured = false;
    Tensor logits;
  };
  std::vector<BucketGraph> graphs_;

  // Per-step host metadata, cleared each step: the vectors keep their
  // capacity, so a step allocates nothing once the batch sizes have been seen.
  struct HostStep {
    std::vector<const ScheduledChunk*> prefills, decodes, ordered;
    std::vector<int32_t> tokens, positions, slots, cu, p_ctx, d_ctx, p_tables, d_tables;
    std::vector<int32_t> sample_rows;
    void Clear();
  };
  HostStep step_;
  StepBatch batch_;  // this step's, views into int_buffer_
};

}  // namespace kvserve
