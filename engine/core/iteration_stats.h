// Per-iteration statistics as plain values, and the interface that receives
// them. The engine thread fills the scheduling half; the output stage adds
// the per-request timings and hands the whole to a StatsObserver on its own
// thread, so no metrics library is touched on the engine thread.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace kvserve {

/// One iteration of the engine loop (with or without a model step).
struct IterationStats {
  absl::Time time;  // when the engine finished the iteration

  // Filled by the engine thread.
  int kv_blocks_total = 0;
  int kv_blocks_used = 0;       // at the end of the iteration
  int kv_blocks_used_peak = 0;  // most held at any point of the iteration
  int num_running = 0;
  int num_waiting = 0;
  int num_paused = 0;         // requests whose client is not reading (--max_unsent_tokens)
  int num_pauses = 0;         // requests that became paused in this iteration
  int num_stall_cancels = 0;  // requests ended paused past --max_stall_s
  int num_preemptions = 0;
  int prefix_cache_queried_tokens = 0;  // tokens of admitted sequences looked up
  int prefix_cache_hit_tokens = 0;      // of them, found cached
  int64_t num_prompt_tokens = 0;       // prompts admitted for the first time
  std::vector<double> queue_times_s;   // arrival → first admission, one per admitted request
  bool ran_model_step = false;
  int num_step_tokens = 0;             // tokens run through the model

  // Filled by the output stage.
  int num_generation_tokens = 0;               // tokens delivered to requests
  std::vector<double> time_to_first_token_s;   // arrival → first token
  std::vector<double> inter_token_latency_s;   // between a request's consecutive tokens
  std::vector<double> e2e_latency_s;           // arrival → finish (not aborts)
};

/// Receives every iteration's stats, in order, on the output thread.
class StatsObserver {
 public:
  virtual ~StatsObserver() = default;
  virtual void OnIteration(const IterationStats& stats) = 0;
};

}  // namespace kvserve
