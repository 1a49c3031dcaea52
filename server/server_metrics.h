// Request outcomes, counted once per request when it ends, by API:
// kvserve_requests_total{api="grpc"|"http", outcome="length"|"eos"|"stop"|"cancelled"|
// "deadline_exceeded"|"invalid_argument"|"not_found"|"resource_exhausted"|"unavailable"|"error"}.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "server/auth/bearer_tokens.h"

namespace kvserve {

enum class Api { kGrpc, kHttp };

class ServerMetrics {
 public:
  explicit ServerMetrics(prometheus::Registry& registry);
  void RecordOutcome(const std::string& outcome, Api api = Api::kGrpc);
  /// A request refused by bearer-token authentication (any method or route,
  /// not only generation): kvserve_auth_failures_total{api, reason}, reason
  /// "missing", "malformed" or "rejected" (docs/security.md).
  void RecordAuthFailure(AuthResult result, Api api);
  /// kvserve_kernel_fallbacks{kernel} = 1 for each fast GPU kernel replaced
  /// by its reference at start-up (docs/cuda.md); the family exists, empty,
  /// when there is none.
  void ReportKernelFallbacks(const std::vector<std::string>& kernels);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& auth_failures_;
  prometheus::Family<prometheus::Gauge>& kernel_fallbacks_;
};

}  // namespace kvserve
