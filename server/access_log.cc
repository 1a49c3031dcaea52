#include "server/access_log.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"

namespace kvserve {
namespace {

std::string Milliseconds(absl::Duration d) {
  return absl::StrFormat("%.1f", absl::ToDoubleMilliseconds(d));
}

}  // namespace

std::string FormatAccessLine(const AccessRecord& r) {
  return absl::StrCat(
      "access api=", r.api == Api::kHttp ? "http" : "grpc", " route=", r.route, " id=\"",
      absl::CHexEscape(r.request_id), "\" model=", r.model, " stream=", r.stream ? "true" : "false",
      " prompt_tokens=", r.prompt_tokens, " output_tokens=", r.output_tokens,
      " ttft_ms=", r.time_to_first_token ? Milliseconds(*r.time_to_first_token) : "-",
      " duration_ms=", Milliseconds(r.duration), " outcome=", r.outcome);
}

void RecordRequestEnd(ServerMetrics& metrics, const AccessRecord& record) {
  metrics.RecordOutcome(record.outcome, record.api);
  KV_LOG(INFO) << FormatAccessLine(record);
}

}  // namespace kvserve
