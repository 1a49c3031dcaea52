// The standard serving metrics of one load level, from its request records.
//
//   TTFT  send → first chunk received
//   ITL   gaps between chunks, spread over the tokens each chunk carries
//         (a chunk of k tokens after a gap g gives k samples of g/k)
//   TPOT  (E2E − TTFT) / (tokens − 1), per request with at least 2 tokens
//   E2E   send → last chunk (stream end)
// Throughputs divide by the level's duration: first measured send → last end.
// Goodput counts requests that met every given SLO (TTFT, TPOT).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/bench/bench_config.h"
#include "client/bench/load_runner.h"

namespace kvserve::bench {

struct Distribution {
  int count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

/// Percentiles by linear interpolation between order statistics (numpy's default).
Distribution Summarize(std::vector<double> values);

struct ServerSide {
  double requests = 0;           // kvserve_requests_total delta, all outcomes
  double ttft_mean_ms = 0;       // from the server's TTFT histogram delta
  double ttft_count = 0;
  double preemptions = 0;
  double kv_blocks_total = 0;
  double kv_blocks_used_peak = 0;  // highest value sampled during the level
};

/// The requests one replica answered (its final attempt's replica).
struct ReplicaShare {
  int requests = 0;
  int completed = 0;
  int failed = 0;
};

struct LevelSummary {
  std::string label;
  int concurrency = 0;
  double rate = 0;
  int completed = 0;
  int failed = 0;
  std::map<std::string, int> errors_by_code;
  double duration_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  double request_throughput = 0;  // completed requests/s
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  int good_requests = 0;
  double goodput = 0;  // good requests/s
  std::optional<ServerSide> server;
  std::map<std::string, ReplicaShare> replicas;  // by address
  int failovers = 0;        // attempts moved to another replica after UNAVAILABLE
  int retried_requests = 0; // requests that needed more than one attempt
};

LevelSummary SummarizeLevel(const LevelRun& run, const BenchConfig& config);

}  // namespace kvserve::bench
