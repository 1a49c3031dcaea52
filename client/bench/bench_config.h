// kvserve-bench settings, parsed from flags and validated before any request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvserve::bench {

enum class LengthDist { kFixed, kUniform, kLogNormal };
enum class Arrival { kPoisson, kConstant };
enum class PromptKind { kTokenIds, kText };

/// How many tokens each request asks for (prompt or output).
struct LengthSpec {
  LengthDist dist = LengthDist::kFixed;
  int mean = 128;  // fixed: the value; uniform: the middle; lognormal: the median
  int min = 1;     // uniform: [min, max]; all: clamp
  int max = 0;     // 0: 2 × mean
  double sigma = 0.5;  // lognormal: sigma of log(length)
};

struct BenchConfig {
  std::vector<std::string> targets;
  std::vector<int> concurrency;   // closed loop; several = a sweep
  std::optional<double> rate;     // open loop, requests per second
  Arrival arrival = Arrival::kPoisson;
  int max_in_flight = 1024;       // open loop: cap on outstanding requests
  int requests = 0;               // per level; 0 = bounded by duration only
  double duration_s = 0;          // per level; 0 = bounded by requests only
  int warmup_requests = -1;       // per level; -1 = the level's concurrency (min 1)
  LengthSpec prompt;
  LengthSpec output;
  std::string prompts_file;       // JSONL: {"text": ...} or {"token_ids": [...]}, optional
                                  // "max_new_tokens" (or "max_tokens")
  /// Instead of load levels: request 0 alone (cold), then the rest one at a
  /// time (warm), TTFT compared (cold_warm.h).
  bool cold_warm = false;
  PromptKind prompt_kind = PromptKind::kTokenIds;
  bool ignore_eos = true;
  double temperature = 0;
  std::string json_schema;  // --json_schema's contents; empty: unconstrained
  uint64_t seed = 1;
  double timeout_s = 600;
  /// How long to wait for a target to answer health checks as SERVING before
  /// the run; the wait is announced on stderr when it is not immediate.
  double connect_timeout_s = 30;
  std::optional<double> slo_ttft_ms;
  std::optional<double> slo_tpot_ms;
  std::string metrics_url;        // the server's /metrics, scraped before and after each level
  std::string json_out;
  std::string records_out;        // JSONL, one line per measured request
  std::string plot_out;
  bool use_tls = false;
  std::string tls_ca;
  bool progress = true;

  absl::Status Validate() const;
  /// The load levels to run: each concurrency, or the one rate.
  int num_levels() const { return rate ? 1 : static_cast<int>(concurrency.size()); }
};

/// Parses "fixed", "uniform", "lognormal".
absl::StatusOr<LengthDist> ParseLengthDist(const std::string& name);

}  // namespace kvserve::bench
