// The engine's Prometheus metrics. Families are registered once in a
// registry the server exposes over HTTP; prometheus-cpp metrics are atomic,
// so the engine thread updates them and the HTTP thread reads them freely.
#pragma once

#include <memory>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kvserve {

struct EngineMetrics {
  explicit EngineMetrics(prometheus::Registry& registry);

  prometheus::Gauge& kv_blocks_total;
  prometheus::Gauge& kv_blocks_used;
  prometheus::Gauge& kv_blocks_used_peak;  // high-water mark since start
  prometheus::Gauge& requests_running;
  prometheus::Gauge& requests_waiting;
  prometheus::Counter& preemptions_total;
  prometheus::Counter& prompt_tokens_total;
  prometheus::Counter& generation_tokens_total;
  prometheus::Counter& steps_total;
  prometheus::Counter& prefix_cache_queries_total;  // tokens looked up at admission
  prometheus::Counter& prefix_cache_hits_total;     // of them, found cached
  prometheus::Histogram& time_to_first_token;  // seconds, arrival → first token
  prometheus::Histogram& inter_token_latency;  // seconds between a request's tokens
  prometheus::Histogram& queue_time;           // seconds, arrival → first admission
  prometheus::Histogram& e2e_latency;          // seconds, arrival → finish
  prometheus::Histogram& step_tokens;          // tokens per model step
};

}  // namespace kvserve
