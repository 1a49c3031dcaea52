#include "server/server_metrics.h"

namespace kvserve {
namespace {

const char* ApiLabel(Api api) { return api == Api::kHttp ? "http" : "grpc"; }

}  // namespace

ServerMetrics::ServerMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("kvserve_requests_total")
                    .Help("Generate requests that ended, by API and outcome")
                    .Register(registry)) {
  // Every (api, outcome) pair appears from the start, at 0.
  for (Api api : {Api::kGrpc, Api::kHttp}) {
    for (const char* outcome : {"length", "eos", "stop", "cancelled", "deadline_exceeded",
                                "invalid_argument", "not_found", "resource_exhausted",
                                "unavailable", "error"}) {
      requests_.Add({{"api", ApiLabel(api)}, {"outcome", outcome}});
    }
  }
}

void ServerMetrics::RecordOutcome(const std::string& outcome, Api api) {
  requests_.Add({{"api", ApiLabel(api)}, {"outcome", outcome}}).Increment();
}

}  // namespace kvserve
