#include "engine/core/metrics/stats_line_logger.h"

#include "absl/strings/str_format.h"
#include "base/logging.h"

namespace kvserve {
namespace {

double PerSecond(int64_t n, absl::Duration elapsed) {
  const double s = absl::ToDoubleSeconds(elapsed);
  return s > 0 ? static_cast<double>(n) / s : 0.0;
}

double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

std::string FormatStatsLine(const StatsWindow& w) {
  return absl::StrFormat(
      "stats: prompt %.1f tokens/s, generation %.1f tokens/s, running %d reqs, waiting %d reqs, "
      "paused %d reqs, KV cache %.1f%% (%d/%d blocks), prefix cache hits %.1f%%, preemptions %d",
      PerSecond(w.prompt_tokens, w.elapsed), PerSecond(w.generation_tokens, w.elapsed),
      w.num_running, w.num_waiting, w.num_paused, Percent(w.kv_blocks_used, w.kv_blocks_total),
      w.kv_blocks_used, w.kv_blocks_total,
      Percent(w.prefix_cache_hit_tokens, w.prefix_cache_queried_tokens), w.preemptions);
}

StatsLineLogger::StatsLineLogger(absl::Duration interval)
    : write_([](const std::string& line) { KV_LOG(INFO) << line; }),
      window_start_(absl::Now()),
      enabled_(interval > absl::ZeroDuration()) {
  if (enabled_) thread_ = std::thread([this, interval] { Run(interval); });
}

StatsLineLogger::StatsLineLogger(absl::Time start, Writer write)
    : write_(std::move(write)), window_start_(start), enabled_(true) {}

StatsLineLogger::~StatsLineLogger() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StatsLineLogger::OnIteration(const IterationStats& s) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  window_.prompt_tokens += s.num_prompt_tokens;
  window_.generation_tokens += s.num_generation_tokens;
  window_.prefix_cache_queried_tokens += s.prefix_cache_queried_tokens;
  window_.prefix_cache_hit_tokens += s.prefix_cache_hit_tokens;
  window_.preemptions += s.num_preemptions;
  window_.num_running = s.num_running;
  window_.num_waiting = s.num_waiting;
  window_.num_paused = s.num_paused;
  window_.kv_blocks_used = s.kv_blocks_used;
  window_.kv_blocks_total = s.kv_blocks_total;
}

bool StatsLineLogger::MaybeWrite(absl::Time now) {
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    StatsWindow w = window_;
    w.elapsed = now - window_start_;
    window_start_ = now;
    // The counts carry over: they describe the server, not the window.
    window_.prompt_tokens = window_.generation_tokens = 0;
    window_.prefix_cache_queried_tokens = window_.prefix_cache_hit_tokens = 0;
    window_.preemptions = 0;
    const bool happened = w.prompt_tokens > 0 || w.generation_tokens > 0 || w.preemptions > 0 ||
                          w.num_running != last_running_ || w.num_waiting != last_waiting_;
    if (!happened) return false;
    last_running_ = w.num_running;
    last_waiting_ = w.num_waiting;
    line = FormatStatsLine(w);
  }
  write_(line);
  return true;
}

void StatsLineLogger::Run(absl::Duration interval) {
  for (absl::Time next = absl::Now() + interval;; next += interval) {
    {
      absl::MutexLock lock(&mu_);
      const bool stop = mu_.AwaitWithDeadline(absl::Condition(&stopping_), next);
      if (stop) return;
    }
    MaybeWrite(absl::Now());
  }
}

}  // namespace kvserve
