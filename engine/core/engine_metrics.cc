#include "engine/core/engine_metrics.h"

namespace kvserve {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5,
          0.75,  1.0,    2.5,   5.0,  7.5,   10.0, 20.0,  40.0, 80.0};
}

prometheus::Gauge& MakeGauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter& MakeCounter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

prometheus::Histogram& MakeHistogram(prometheus::Registry& r, const char* name, const char* help,
                                     prometheus::Histogram::BucketBoundaries buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({}, std::move(buckets));
}

}  // namespace

EngineMetrics::EngineMetrics(prometheus::Registry& r)
    : kv_blocks_total(MakeGauge(r, "kvserve_kv_blocks_total", "KV cache blocks in the pool")),
      kv_blocks_used(MakeGauge(r, "kvserve_kv_blocks_used", "KV cache blocks held by sequences")),
      kv_blocks_used_peak(MakeGauge(r, "kvserve_kv_blocks_used_peak",
                                    "Most KV cache blocks held at once since start")),
      requests_running(MakeGauge(r, "kvserve_requests_running", "Sequences admitted and running")),
      requests_waiting(MakeGauge(r, "kvserve_requests_waiting",
                                 "Requests queued or preempted, waiting for admission")),
      preemptions_total(MakeCounter(r, "kvserve_preemptions_total",
                                    "Sequences preempted for lack of KV blocks")),
      prompt_tokens_total(MakeCounter(r, "kvserve_prompt_tokens_total", "Prompt tokens admitted")),
      generation_tokens_total(MakeCounter(r, "kvserve_generation_tokens_total", "Tokens generated")),
      steps_total(MakeCounter(r, "kvserve_engine_steps_total", "Model steps run")),
      prefix_cache_queries_total(
          MakeCounter(r, "kvserve_prefix_cache_queries_total",
                      "Tokens of admitted sequences looked up in the prefix cache")),
      prefix_cache_hits_total(
          MakeCounter(r, "kvserve_prefix_cache_hits_total",
                      "Tokens found in the prefix cache (K/V reused, not computed)")),
      time_to_first_token(MakeHistogram(r, "kvserve_time_to_first_token_seconds",
                                        "Request arrival to its first generated token",
                                        LatencyBuckets())),
      inter_token_latency(MakeHistogram(r, "kvserve_inter_token_latency_seconds",
                                        "Time between consecutive tokens of a request",
                                        LatencyBuckets())),
      queue_time(MakeHistogram(r, "kvserve_queue_time_seconds",
                               "Request arrival to its first admission", LatencyBuckets())),
      e2e_latency(MakeHistogram(r, "kvserve_e2e_request_latency_seconds",
                                "Request arrival to its end", LatencyBuckets())),
      step_tokens(MakeHistogram(r, "kvserve_step_tokens", "Tokens run per model step",
                                {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192})) {}

}  // namespace kvserve
