// Request outcomes, counted once per request when it ends, by API:
// kvserve_requests_total{api="grpc"|"http", outcome="length"|"eos"|"stop"|"cancelled"|
// "deadline_exceeded"|"invalid_argument"|"not_found"|"resource_exhausted"|"unavailable"|"error"}.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace kvserve {

enum class Api { kGrpc, kHttp };

class ServerMetrics {
 public:
  explicit ServerMetrics(prometheus::Registry& registry);
  void RecordOutcome(const std::string& outcome, Api api = Api::kGrpc);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
};

}  // namespace kvserve
