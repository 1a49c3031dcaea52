// Turns one ScheduleOutput into a StepBatch on the device, runs the model and
// samples: host metadata goes up in one copy, the sampling parameters in one
// or two (SamplingBatch), sampled ids and log-probabilities come back in one.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/sampling_batch.h"
#include "engine/core/scheduler.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/model.h"

namespace kvserve {

struct StepResult {
  std::vector<SeqId> seq_ids;   // sequences that sampled, in batch order
  std::vector<int32_t> tokens;  // their new tokens
  std::vector<std::vector<float>> logits;  // per sampled row; empty unless captured
  std::vector<TokenLogprobs> logprobs;     // per sampled row; empty unless asked for
  int num_tokens = 0;  // tokens run through the model
};

class ModelRunner {
 public:
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(Backend& backend, Model& model,
                                                             KvCache& cache, int max_tokens,
                                                             int max_seqs);

  absl::StatusOr<StepResult> Run(const ScheduleOutput& schedule, const Scheduler& scheduler,
                                 const std::function<SamplingRow(SeqId)>& sampling);

 private:
  ModelRunner(Backend& backend, Model& model, KvCache& cache)
      : backend_(backend), model_(model), cache_(cache) {}

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

  // Per-step host metadata, cleared each step: the vectors keep their
  // capacity, so a step allocates nothing once the batch sizes have been seen.
  struct HostStep {
    std::vector<const ScheduledChunk*> prefills, decodes, ordered;
    std::vector<int32_t> tokens, positions, slots, cu, p_ctx, d_ctx, p_tables, d_tables;
    std::vector<int32_t> sample_rows;
    void Clear();
  };
  HostStep step_;
};

}  // namespace kvserve
