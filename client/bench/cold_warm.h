// --cold_warm: the prefix-caching benchmark. The first request of the
// workload is sent alone on an idle server (cold: its whole prompt is
// computed); then the rest, one at a time (warm: when they share a prefix with
// the first, the server reuses its cached K/V). Sequential on purpose, so a
// request's TTFT is its own prefill and nothing else: the cold TTFT, the warm
// TTFT distribution and their ratio are printed.
#pragma once

#include <string>
#include <vector>

#include "client/bench/bench_config.h"
#include "client/bench/summary.h"
#include "client/bench/workload.h"
#include "client/client.h"

namespace kvserve::bench {

struct ColdWarmResult {
  double cold_ttft_ms = 0;
  Distribution warm_ttft_ms;
  int warm_requests = 0;
  int failed = 0;
  std::string first_error;
  /// cold / warm p50: how many times faster the first token comes when warm.
  double speedup() const { return warm_ttft_ms.p50 > 0 ? cold_ttft_ms / warm_ttft_ms.p50 : 0; }
};

/// Sends requests 0 .. num_requests - 1 of `workload` one after another.
ColdWarmResult RunColdWarm(Client& client, const Workload& workload, const BenchConfig& config,
                           int num_requests);

/// The lines kvserve-bench prints for a --cold_warm run.
std::string FormatColdWarm(const ColdWarmResult& result);

}  // namespace kvserve::bench
