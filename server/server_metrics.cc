#include "server/server_metrics.h"

namespace kvserve {
namespace {

const char* ApiLabel(Api api) { return api == Api::kHttp ? "http" : "grpc"; }

const char* ReasonLabel(AuthResult result) {
  switch (result) {
    case AuthResult::kMissing: return "missing";
    case AuthResult::kMalformed: return "malformed";
    default: return "rejected";
  }
}

}  // namespace

ServerMetrics::ServerMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("kvserve_requests_total")
                    .Help("Generate requests that ended, by API and outcome")
                    .Register(registry)),
      auth_failures_(prometheus::BuildCounter()
                         .Name("kvserve_auth_failures_total")
                         .Help("Requests refused by bearer-token authentication, by API and reason")
                         .Register(registry)),
      kernel_fallbacks_(prometheus::BuildGauge()
                            .Name("kvserve_kernel_fallbacks")
                            .Help("Fast GPU kernels that disagreed with their reference kernel at "
                                  "start-up and were replaced by it (1 per kernel)")
                            .Register(registry)) {
  // Every (api, outcome) pair appears from the start, at 0.
  for (Api api : {Api::kGrpc, Api::kHttp}) {
    for (const char* outcome : {"length", "eos", "stop", "cancelled", "deadline_exceeded",
                                "invalid_argument", "not_found", "resource_exhausted",
                                "unavailable", "error"}) {
      requests_.Add({{"api", ApiLabel(api)}, {"outcome", outcome}});
    }
    for (AuthResult r : {AuthResult::kMissing, AuthResult::kMalformed, AuthResult::kRejected}) {
      auth_failures_.Add({{"api", ApiLabel(api)}, {"reason", ReasonLabel(r)}});
    }
  }
}

void ServerMetrics::RecordOutcome(const std::string& outcome, Api api) {
  requests_.Add({{"api", ApiLabel(api)}, {"outcome", outcome}}).Increment();
}

void ServerMetrics::ReportKernelFallbacks(const std::vector<std::string>& kernels) {
  for (const std::string& kernel : kernels) kernel_fallbacks_.Add({{"kernel", kernel}}).Set(1);
}

void ServerMetrics::RecordAuthFailure(AuthResult result, Api api) {
  auth_failures_.Add({{"api", ApiLabel(api)}, {"reason", ReasonLabel(result)}}).Increment();
}

}  // namespace kvserve
