// kvserve-bench output: a human table, a JSON report, and for a sweep a PNG
// plot (gnuplot) of throughput against latency.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/bench/bench_config.h"
#include "client/bench/summary.h"
#include "kvserve/v1/inference.pb.h"

namespace kvserve::bench {

/// The table, one row per level, then the server-side check when scraped.
std::string FormatTable(const std::vector<LevelSummary>& levels);

absl::Status WriteJson(const std::string& path, const BenchConfig& config,
                       const v1::GetModelInfoResponse& model,
                       const std::vector<LevelSummary>& levels);

/// One JSON line per measured request of `run` (index, request_id, replica,
/// attempts, failovers, code, error, tokens), appended to `out`.
void WriteRecords(std::ostream& out, const LevelRun& run);

/// OK when gnuplot is on $PATH; else says how to get it or drop --plot_out,
/// so that a run that would end without its plot does not start.
absl::Status CheckGnuplot();

/// Output tokens/s (x) against p50 and p99 end-to-end latency and p50 TTFT
/// (y), one point per level, labelled with its load.
absl::Status WritePlot(const std::string& path, const std::vector<LevelSummary>& levels,
                       const std::string& title);

}  // namespace kvserve::bench
