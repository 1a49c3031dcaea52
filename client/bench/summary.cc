#include "client/bench/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvserve::bench {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(position));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (position - lo);
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

}  // namespace

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  d.count = static_cast<int>(values.size());
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  d.p50 = Percentile(values, 0.50);
  d.p90 = Percentile(values, 0.90);
  d.p99 = Percentile(values, 0.99);
  d.min = values.front();
  d.max = values.back();
  return d;
}

LevelSummary SummarizeLevel(const LevelRun& run, const BenchConfig& config) {
  LevelSummary s;
  s.label = run.label;
  s.concurrency = run.concurrency;
  s.rate = run.rate;
  absl::Time last_end = run.start;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord& r : run.records) {
    ReplicaShare& share = s.replicas[r.replica];
    ++share.requests;
    ++(r.ok() ? share.completed : share.failed);
    s.failovers += r.failovers;
    s.retried_requests += r.attempts > 1;
    if (!r.ok()) {
      ++s.failed;
      ++s.errors_by_code[std::to_string(static_cast<int>(r.code))];
      continue;
    }
    ++s.completed;
    last_end = std::max(last_end, r.done);
    s.prompt_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    const double r_ttft = Ms(r.first_chunk - r.sent);
    const double r_e2e = Ms(r.done - r.sent);
    ttft.push_back(r_ttft);
    e2e.push_back(r_e2e);
    std::optional<double> r_tpot;
    if (r.output_tokens >= 2) {
      r_tpot = (r_e2e - r_ttft) / (r.output_tokens - 1);
      tpot.push_back(*r_tpot);
    }
    for (size_t c = 1; c < r.chunk_times.size(); ++c) {
      const int k = std::max(1, r.chunk_tokens[c]);
      const double gap = Ms(r.chunk_times[c] - r.chunk_times[c - 1]) / k;
      for (int i = 0; i < k; ++i) itl.push_back(gap);
    }
    const bool ttft_ok = !config.slo_ttft_ms || r_ttft <= *config.slo_ttft_ms;
    const bool tpot_ok = !config.slo_tpot_ms || !r_tpot || *r_tpot <= *config.slo_tpot_ms;
    s.good_requests += ttft_ok && tpot_ok;
  }
  // Name error codes the way gRPC does.
  std::map<std::string, int> named;
  for (const auto& [code, n] : s.errors_by_code) {
    static const char* kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                                   "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                                   "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                                   "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                   "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    const int c = std::stoi(code);
    named[c >= 0 && c <= 16 ? kNames[c] : code] += n;
  }
  s.errors_by_code = named;
  s.duration_s = std::max(1e-9, absl::ToDoubleSeconds(std::max(run.end, last_end) - run.start));
  if (s.completed > 0) s.duration_s = std::max(1e-9, absl::ToDoubleSeconds(last_end - run.start));
  s.request_throughput = s.completed / s.duration_s;
  s.output_tokens_per_s = s.output_tokens / s.duration_s;
  s.total_tokens_per_s = (s.prompt_tokens + s.output_tokens) / s.duration_s;
  s.goodput = s.good_requests / s.duration_s;
  s.ttft_ms = Summarize(ttft);
  s.tpot_ms = Summarize(tpot);
  s.itl_ms = Summarize(itl);
  s.e2e_ms = Summarize(e2e);
  return s;
}

}  // namespace kvserve::bench
