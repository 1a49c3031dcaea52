// Reads the server's Prometheus endpoint, so a run can be checked against
// what the server itself counted (requests, TTFT histogram, preemptions, KV
// blocks).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace kvserve::bench {

/// Series name with labels (as written) → value.
using MetricSnapshot = std::map<std::string, double>;

/// GET `url` (http://host:port/metrics) and parse the text format.
absl::StatusOr<MetricSnapshot> Scrape(const std::string& url);

/// Sum of every series of `name` (all label values).
double SumSeries(const MetricSnapshot& snapshot, const std::string& name);

/// Samples one gauge in the background and keeps its maximum.
class GaugePeakSampler {
 public:
  GaugePeakSampler(std::string url, std::string gauge);
  ~GaugePeakSampler();
  double peak() const { return peak_.load(); }

 private:
  std::string url_, gauge_;
  std::atomic<double> peak_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kvserve::bench
