// The serving core. One engine thread owns the scheduler, the KV cache and the
// model, and loops: take new requests → apply requested stops → drop cancelled
// and expired ones → schedule → run the model → sample → hand token ids and
// the iteration's stats to the output stage (OutputProcessor), whose own
// thread detokenizes, matches stop strings, calls the sinks and the
// StatsObserver. The engine thread never touches text, metrics or a sink call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/engine_config.h"
#include "engine/core/engine_output.h"
#include "engine/core/iteration_stats.h"
#include "engine/core/model_info.h"
#include "engine/core/model_runner.h"
#include "engine/core/output_processor.h"
#include "engine/core/request.h"
#include "engine/core/scheduler.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/kv_cache.h"
#include "engine/loading/model_loader.h"
#include "engine/model/model.h"
#include "engine/text/tokenizer.h"
#include "kernels/backend.h"

namespace kvserve {

struct ActiveRequest;

class Engine {
 public:
  /// Loads the model onto `backend`, sizes the KV pool and starts the engine
  /// thread and the output thread. `stats` (borrowed, may be null) receives
  /// every iteration's stats on the output thread; it must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineConfig& config,
                                                        ModelSource model,
                                                        std::unique_ptr<Backend> backend,
                                                        StatsObserver* stats = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Validates and queues a request. Errors: INVALID_ARGUMENT (bad request),
  /// RESOURCE_EXHAUSTED (queue full), UNAVAILABLE (stopping). On OK the sink
  /// will see the request end, one way or another.
  absl::Status Submit(Request request, std::shared_ptr<RequestSink> sink);
  /// Wakes the engine thread so it notices a cancelled sink promptly.
  void Wake();
  /// Asks the engine thread to end sequence `id` at its next iteration (a
  /// stop string matched): its blocks are freed and a StopApplied event goes
  /// to the output stage. No-op when the sequence has ended already.
  void RequestStop(SeqId id);
  /// Ends every request in flight, queued or running, with `status` at the
  /// engine thread's next iteration (their KV blocks freed), and refuses
  /// later submissions with it. For shutdown once the drain grace has run out:
  /// each client then hears why (docs/errors.md) rather than a bare cut.
  void AbortAll(absl::Status status);
  /// Aborts every request with UNAVAILABLE, joins the engine thread, then
  /// lets the output stage deliver everything and joins it.
  void Stop();

  const ModelInfo& info() const { return info_; }
  /// Null when the model has no tokenizer.
  const Tokenizer* tokenizer() const { return source_.tokenizer.get(); }
  /// Compiles a structured-output constraint for this model's vocabulary
  /// (cached by content; thread-safe). Errors name the API field
  /// ("sampling.regex: at offset 3: ..."): INVALID_ARGUMENT, or
  /// RESOURCE_EXHAUSTED past EngineConfig::constraints' limits.
  absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> CompileConstraint(
      const grammar::ConstraintSpec& spec) const;
  /// Requests submitted whose client has not yet seen the end (the output stage counts them down).
  int num_live_requests() const { return live_requests_.load(); }
  /// KV blocks held right now (read from the engine's last update).
  int num_used_blocks() const { return used_blocks_.load(); }
  /// Tokens a streaming request may have produced but not yet written to its
  /// client before it is paused (--max_unsent_tokens; 0: never paused).
  int max_unsent_tokens() const { return config_.max_unsent_tokens; }

 private:
  Engine(const EngineConfig& config, ModelSource model, std::unique_ptr<Backend> backend,
         StatsObserver* stats);
  absl::Status Initialize();
  /// Bytes the KV pool may take when --num_kv_blocks is 0 (see engine.cc).
  absl::StatusOr<size_t> KvCacheBudget(size_t block_bytes);
  void Loop();
  void AdmitSubmitted(std::vector<std::unique_ptr<ActiveRequest>> submitted);
  void ApplyStops(const std::vector<SeqId>& stops);
  /// Reads every sink's IsPaused into its Sequence and notes since when it is paused.
  void UpdatePauses();
  /// When the loop must wake with nothing runnable: the next stall limit or
  /// deadline of a paused request (InfiniteFuture when none is paused).
  absl::Time NextTimedCheck() const;
  /// Cancelled, past its deadline, or paused longer than --max_stall_s.
  void AbortCancelledAndExpired();
  void Step();
  /// The next token's sampling parameters; draws the request's next uniform.
  /// `logprobs`: the token's, when the step computed any (else null).
  void ProcessToken(ActiveRequest& req, int32_t token, std::vector<float> logits,
                    TokenLogprobs* logprobs);
  void Abort(ActiveRequest& req, absl::Status status);
  /// Frees the request's blocks and forgets it.
  void Release(SeqId id);
  /// Records the blocks in use (for num_used_blocks and the iteration's peak).
  void NoteBlockUsage();
  /// Completes the iteration's stats and hands its output to the output stage.
  void FlushIteration();

  EngineConfig config_;
  ModelSource source_;
  mutable std::once_flag constraint_compiler_once_;
  mutable std::unique_ptr<grammar::ConstraintCompiler> constraint_compiler_;
  std::unique_ptr<Backend> backend_;
  StatsObserver* stats_;
  ModelInfo info_;

  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> kv_cache_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;

  // Engine-thread state.
  std::map<SeqId, std::unique_ptr<ActiveRequest>> active_;
  SeqId next_seq_id_ = 1;
  int num_paused_ = 0;  // requests in active_ with paused_since set
  EngineIterationOutput iteration_;  // what this iteration hands the output stage

  // Shared with submitting threads.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ActiveRequest>> submitted_;  // guarded by mu_
  bool stopping_ = false;                                  // guarded by mu_
  bool wake_ = false;                                      // guarded by mu_
  absl::Status abort_all_;  // guarded by mu_; not OK: AbortAll was called with it
  std::vector<SeqId> stop_requests_;                       // guarded by mu_
  std::atomic<int> live_requests_{0};
  std::atomic<int> used_blocks_{0};
  std::atomic<uint64_t> unseeded_counter_{0};
  std::unique_ptr<OutputProcessor> output_;  // started before, stopped after thread_
  std::thread thread_;
};

}  // namespace kvserve
