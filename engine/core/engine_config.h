// Engine limits, filled from flags and validated before anything starts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "engine/grammar/constraint_compiler.h"

namespace kvserve {

struct EngineConfig {
  int max_num_seqs = 64;              // --max_num_seqs
  int max_num_batched_tokens = 1024;  // --max_num_batched_tokens (prefill chunk bound)
  int block_size = 16;                // --block_size
  int num_kv_blocks = 0;              // --num_kv_blocks; 0 = size from kv_cache_bytes
  size_t kv_cache_bytes = size_t(512) << 20;  // pool budget when num_kv_blocks is 0 (CPU)
  /// On a device that reports its memory (a GPU), the KV pool takes what is
  /// left of this fraction of it once weights and workspace are allocated.
  double gpu_memory_utilization = 0.9;        // --gpu_memory_utilization
  int max_queued_requests = 1024;     // --max_queued_requests waiting beyond running
  uint32_t default_max_new_tokens = 256;  // --default_max_new_tokens
  uint64_t seed = 0;                  // --seed: base of the seeds of unseeded requests
  /// Reuse the K/V of cached prompt prefixes (docs/prefix_caching.md).
  bool enable_prefix_caching = true;  // --enable_prefix_caching
  /// Output back-pressure (docs/backpressure.md): a streaming request with
  /// this many tokens produced but not yet written to its client is paused
  /// (not scheduled, KV blocks kept) until the client reads; 0 = never.
  int max_unsent_tokens = 256;        // --max_unsent_tokens
  /// A request paused this long is ended with RESOURCE_EXHAUSTED and its
  /// blocks freed; 0 = never.
  double max_stall_s = 60;            // --max_stall_s
  /// Fraction of the pool kept free when admitting while others run.
  double admission_reserve_fraction = 0.01;
  /// Tests: after every step, check that the model runner's own copy of each
  /// sequence (built from the schedule's messages) equals the scheduler's;
  /// a mismatch fails the step's requests with INTERNAL.
  bool verify_runner_state = false;
  /// Structured outputs: size and compile-time limits of a constraint
  /// (--max_constraint_bytes, --max_constraint_compile_ms) and how many
  /// compiled ones are cached.
  grammar::ConstraintLimits constraints;

  /// InvalidArgument naming the flag and its limit.
  absl::Status Validate() const;
};

}  // namespace kvserve
