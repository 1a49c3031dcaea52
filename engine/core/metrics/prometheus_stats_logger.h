// The engine's Prometheus metrics, fed from the engine's per-iteration stats
// (a StatsObserver, called on the output thread). Families are registered
// once in a registry the server exposes over HTTP; prometheus-cpp metrics are
// atomic, so the HTTP thread reads them freely.
#pragma once

#include "engine/core/iteration_stats.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kvserve {

class PrometheusStatsLogger final : public StatsObserver {
 public:
  /// Registers the metric families in `registry`, which must outlive this.
  explicit PrometheusStatsLogger(prometheus::Registry& registry);
  void OnIteration(const IterationStats& stats) override;

 private:
  prometheus::Gauge& kv_blocks_total_;
  prometheus::Gauge& kv_blocks_used_;
  prometheus::Gauge& kv_blocks_used_peak_;  // high-water mark since start
  prometheus::Gauge& requests_running_;
  prometheus::Gauge& requests_waiting_;
  prometheus::Gauge& requests_paused_;          // client not reading (--max_unsent_tokens)
  prometheus::Counter& stream_pauses_total_;         // times a request became paused
  prometheus::Counter& stream_stall_cancels_total_;  // ended paused past --max_stall_s
  prometheus::Counter& preemptions_total_;
  prometheus::Counter& prefix_cache_queries_total_;  // tokens looked up at admission
  prometheus::Counter& prefix_cache_hits_total_;     // of them, found cached
  prometheus::Counter& prompt_tokens_total_;
  prometheus::Counter& generation_tokens_total_;
  prometheus::Counter& steps_total_;
  prometheus::Histogram& time_to_first_token_;  // seconds, arrival → first token
  prometheus::Histogram& inter_token_latency_;  // seconds between a request's tokens
  prometheus::Histogram& queue_time_;           // seconds, arrival → first admission
  prometheus::Histogram& e2e_latency_;          // seconds, arrival → finish
  prometheus::Histogram& step_tokens_;          // tokens per model step
};

}  // namespace kvserve
