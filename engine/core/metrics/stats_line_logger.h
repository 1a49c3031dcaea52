// The periodic stats line (--log_stats_interval_s), as vLLM prints it: every
// interval, the prompt and generation throughput since the previous line, the
// requests running and waiting, and the KV cache's use.
//
//   stats: prompt 812.4 tokens/s, generation 95.0 tokens/s, running 4 reqs,
//       waiting 0 reqs, paused 0 reqs, KV cache 12.5% (40/320 blocks),
//       prefix cache hits 30.0%, preemptions 0
//
// A StatsObserver fed the same per-iteration stats as the Prometheus
// metrics, so the two never disagree. A line is written only when something
// happened since the previous one (tokens went through the model, or the
// running and waiting counts changed): an idle server stays quiet.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/core/iteration_stats.h"

namespace kvserve {

/// What happened between two stats lines, and the state at the second.
struct StatsWindow {
  absl::Duration elapsed;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  int64_t prefix_cache_queried_tokens = 0;
  int64_t prefix_cache_hit_tokens = 0;
  int64_t preemptions = 0;
  int num_running = 0;
  int num_waiting = 0;
  int num_paused = 0;
  int kv_blocks_used = 0;
  int kv_blocks_total = 0;
};

/// The line's text, without the logger's level and time prefix.
std::string FormatStatsLine(const StatsWindow& window);

class StatsLineLogger final : public StatsObserver {
 public:
  using Writer = std::function<void(const std::string& line)>;

  /// `interval` > 0: a thread of its own writes the lines to the log (info
  /// level); zero: off (no thread, no lines).
  explicit StatsLineLogger(absl::Duration interval);
  /// No thread: the caller calls MaybeWrite with its own clock (tests).
  StatsLineLogger(absl::Time start, Writer write);
  ~StatsLineLogger() override;
  StatsLineLogger(const StatsLineLogger&) = delete;
  StatsLineLogger& operator=(const StatsLineLogger&) = delete;

  void OnIteration(const IterationStats& stats) override;
  /// Ends the window at `now`: writes its line when something happened in
  /// it, and starts the next. True when a line was written.
  bool MaybeWrite(absl::Time now);

 private:
  void Run(absl::Duration interval);

  Writer write_;
  absl::Mutex mu_;
  StatsWindow window_ ABSL_GUARDED_BY(mu_);
  absl::Time window_start_ ABSL_GUARDED_BY(mu_);
  int last_running_ ABSL_GUARDED_BY(mu_) = 0;  // as the previous line said
  int last_waiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool enabled_ = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace kvserve
