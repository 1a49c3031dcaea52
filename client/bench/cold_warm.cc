#include "client/bench/cold_warm.h"

#include "absl/strings/str_format.h"

namespace kvserve::bench {

ColdWarmResult RunColdWarm(Client& client, const Workload& workload, const BenchConfig& config,
                           int num_requests) {
  ColdWarmResult result;
  std::vector<double> warm;
  CallOptions options;
  options.timeout = absl::Seconds(config.timeout_s);
  for (int i = 0; i < num_requests; ++i) {
    const StreamResult r = client.GenerateStream(workload.Get(i).request, {}, options);
    if (!r.status.ok() || r.first_chunk == absl::InfiniteFuture()) {
      ++result.failed;
      if (result.first_error.empty()) {
        result.first_error = absl::StrFormat("request %d: %s", i, r.status.error_message());
      }
      continue;
    }
    const double ttft_ms = absl::ToDoubleMilliseconds(r.first_chunk - r.sent);
    if (i == 0) {
      result.cold_ttft_ms = ttft_ms;
    } else {
      warm.push_back(ttft_ms);
    }
  }
  result.warm_requests = static_cast<int>(warm.size());
  result.warm_ttft_ms = Summarize(std::move(warm));
  return result;
}

std::string FormatColdWarm(const ColdWarmResult& r) {
  std::string out = absl::StrFormat("TTFT cold (request 0)      %10.2f ms\n", r.cold_ttft_ms);
  absl::StrAppendFormat(&out,
                        "TTFT warm p50 (%4d reqs)   %10.2f ms   (p90 %.2f, min %.2f, max %.2f)\n",
                        r.warm_requests, r.warm_ttft_ms.p50, r.warm_ttft_ms.p90, r.warm_ttft_ms.min,
                        r.warm_ttft_ms.max);
  absl::StrAppendFormat(&out, "cold / warm p50            %10.2f x\n", r.speedup());
  if (r.failed > 0) absl::StrAppendFormat(&out, "failed: %d (%s)\n", r.failed, r.first_error);
  return out;
}

}  // namespace kvserve::bench
