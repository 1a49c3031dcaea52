#include "server/server_metrics.h"

namespace kvserve {

ServerMetrics::ServerMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("kvserve_requests_total")
                    .Help("Generate requests that ended, by outcome")
                    .Register(registry)) {
  // Every outcome appears from the start, at 0.
  for (const char* outcome : {"length", "eos", "stop", "cancelled", "deadline_exceeded",
                              "invalid_argument", "resource_exhausted", "unavailable", "error"}) {
    requests_.Add({{"outcome", outcome}});
  }
}

void ServerMetrics::RecordOutcome(const std::string& outcome) {
  requests_.Add({{"outcome", outcome}}).Increment();
}

}  // namespace kvserve
