// Request outcomes, counted once per RPC when it ends:
// kvserve_requests_total{outcome="length"|"eos"|"stop"|"cancelled"|
// "deadline_exceeded"|"invalid_argument"|"resource_exhausted"|"unavailable"|"error"}.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace kvserve {

class ServerMetrics {
 public:
  explicit ServerMetrics(prometheus::Registry& registry);
  void RecordOutcome(const std::string& outcome);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
};

}  // namespace kvserve
