#include "engine/core/metrics/prometheus_stats_logger.h"

#include <algorithm>

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

PrometheusStatsLogger::PrometheusStatsLogger(prometheus::Registry& r)
    : kv_blocks_total_(MakeGauge(r, "kvserve_kv_blocks_total", "KV cache blocks in the pool")),
      kv_blocks_used_(MakeGauge(r, "kvserve_kv_blocks_used", "KV cache blocks held by sequences")),
      kv_blocks_used_peak_(MakeGauge(r, "kvserve_kv_blocks_used_peak",
                                    "Most KV cache blocks held at once since start")),
      requests_running_(MakeGauge(r, "kvserve_requests_running", "Sequences admitted and running")),
      requests_waiting_(MakeGauge(r, "kvserve_requests_waiting",
                                 "Requests queued or preempted, waiting for admission")),
      requests_paused_(MakeGauge(r, "kvserve_requests_paused",
                                 "Streaming requests paused because their client is not reading "
                                 "(--max_unsent_tokens unsent tokens)")),
      stream_pauses_total_(MakeCounter(r, "kvserve_stream_pauses_total",
                                       "Times a streaming request was paused because its client "
                                       "had --max_unsent_tokens tokens unread")),
      stream_stall_cancels_total_(
          MakeCounter(r, "kvserve_stream_stall_cancels_total",
                      "Requests ended after being paused longer than --max_stall_s")),
      preemptions_total_(MakeCounter(r, "kvserve_preemptions_total",
                                    "Sequences preempted for lack of KV blocks")),
      prefix_cache_queries_total_(
          MakeCounter(r, "kvserve_prefix_cache_queries_total",
                      "Tokens of admitted sequences looked up in the prefix cache")),
      prefix_cache_hits_total_(
          MakeCounter(r, "kvserve_prefix_cache_hits_total",
                      "Tokens found in the prefix cache (K/V reused, not computed)")),
      prompt_tokens_total_(MakeCounter(r, "kvserve_prompt_tokens_total", "Prompt tokens admitted")),
      generation_tokens_total_(MakeCounter(r, "kvserve_generation_tokens_total", "Tokens generated")),
      steps_total_(MakeCounter(r, "kvserve_engine_steps_total", "Model steps run")),
      time_to_first_token_(MakeHistogram(r, "kvserve_time_to_first_token_seconds",
                                        "Request arrival to its first generated token",
                                        LatencyBuckets())),
      inter_token_latency_(MakeHistogram(r, "kvserve_inter_token_latency_seconds",
                                        "Time between consecutive tokens of a request",
                                        LatencyBuckets())),
      queue_time_(MakeHistogram(r, "kvserve_queue_time_seconds",
                               "Request arrival to its first admission", LatencyBuckets())),
      e2e_latency_(MakeHistogram(r, "kvserve_e2e_request_latency_seconds",
                                "Request arrival to its end", LatencyBuckets())),
      step_tokens_(MakeHistogram(r, "kvserve_step_tokens", "Tokens run per model step",
                                {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192})) {}

void PrometheusStatsLogger::OnIteration(const IterationStats& s) {
  kv_blocks_total_.Set(s.kv_blocks_total);
  kv_blocks_used_.Set(s.kv_blocks_used);
  kv_blocks_used_peak_.Set(std::max<double>(kv_blocks_used_peak_.Value(),
                                            std::max(s.kv_blocks_used_peak, s.kv_blocks_used)));
  requests_running_.Set(s.num_running);
  requests_waiting_.Set(s.num_waiting);
  // The counters first: a reader that sees the gauge sees them counted.
  stream_pauses_total_.Increment(s.num_pauses);
  stream_stall_cancels_total_.Increment(s.num_stall_cancels);
  requests_paused_.Set(s.num_paused);
  preemptions_total_.Increment(s.num_preemptions);
  prefix_cache_queries_total_.Increment(s.prefix_cache_queried_tokens);
  prefix_cache_hits_total_.Increment(s.prefix_cache_hit_tokens);
  prompt_tokens_total_.Increment(static_cast<double>(s.num_prompt_tokens));
  generation_tokens_total_.Increment(s.num_generation_tokens);
  if (s.ran_model_step) {
    steps_total_.Increment();
    step_tokens_.Observe(s.num_step_tokens);
  }
  for (double v : s.queue_times_s) queue_time_.Observe(v);
  for (double v : s.time_to_first_token_s) time_to_first_token_.Observe(v);
  for (double v : s.inter_token_latency_s) inter_token_latency_.Observe(v);
  for (double v : s.e2e_latency_s) e2e_latency_.Observe(v);
}

}  // namespace kvserve
