// Helpers for tests that drive the engine directly (no gRPC): a sink that
// collects a request's outputs, and engine construction on a backend.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/core/metrics/prometheus_stats_logger.h"
#include "prometheus/registry.h"

namespace kvserve::testing {

class CollectingSink final : public RequestSink {
 public:
  void OnOutput(RequestOutput output) override;
  void OnAbort(absl::Status status) override;
  bool IsCancelled() const override { return cancelled_.load(); }

  void Cancel() { cancelled_.store(true); }
  /// Waits until the request ended; false on timeout.
  bool WaitDone(absl::Duration timeout = absl::Seconds(120));
  bool done() const;
  int num_outputs() const;

  // Read after WaitDone().
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<std::string> text_deltas;
  std::vector<std::vector<float>> logits;
  std::vector<TokenLogprobs> logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  absl::Status status;  // OK, or why it was aborted
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  int outputs_ = 0;
  std::atomic<bool> cancelled_{false};
};

struct TestEngine {
  std::unique_ptr<prometheus::Registry> registry;
  std::unique_ptr<PrometheusStatsLogger> stats_logger;  // declared before the engine: outlives it
  std::unique_ptr<Engine> engine;
};

/// An engine on `backend` serving `model_dir` ("" = the default model).
TestEngine MakeEngine(const std::string& model_dir, std::unique_ptr<Backend> backend,
                      EngineConfig config = {});
/// An engine on the CPU backend serving `model_dir` ("" = the default model).
TestEngine MakeCpuEngine(const std::string& model_dir, EngineConfig config = {});

/// A greedy request for exactly `max_new_tokens` tokens (EOS ignored).
Request GreedyRequest(std::vector<int32_t> prompt, uint32_t max_new_tokens,
                      bool capture_logits = false);

/// Submits and waits; fails the test on a submission error.
std::shared_ptr<CollectingSink> RunToCompletion(Engine& engine, Request request);

}  // namespace kvserve::testing

namespace kvserve::testing {
/// The value of an unlabelled gauge or counter in `registry`, or -1.
double MetricValue(prometheus::Registry& registry, const std::string& name);
}  // namespace kvserve::testing
