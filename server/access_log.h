// The access log: one info line per generation request that ended, whatever
// its end (a finish reason, a refusal, a cancellation, an error), written
// where kvserve_requests_total counts it, so that the two always agree.
//
//   access api=http route=/v1/completions id="cmpl-..." model=tiny stream=true
//       prompt_tokens=5 output_tokens=16 ttft_ms=12.3 duration_ms=150.2 outcome=length
//
// Prompts and outputs never appear here (--log_prompts logs prompts on lines
// of their own); the request id is quoted and escaped, since gRPC clients
// choose it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "server/server_metrics.h"

namespace kvserve {

/// One ended generation request, as its access-log line shows it.
struct AccessRecord {
  Api api = Api::kGrpc;
  /// gRPC: the method (Generate, GenerateStream, Chat, ChatStream);
  /// HTTP: the path (/v1/completions, /v1/chat/completions).
  std::string route;
  std::string request_id;  // empty: refused before one was known
  std::string model;
  bool stream = false;
  int64_t prompt_tokens = 0;  // 0 when refused before the prompt was tokenized
  int64_t output_tokens = 0;  // generated, over every choice
  /// Arrival to the first generated token; unset when none was generated.
  std::optional<absl::Duration> time_to_first_token;
  absl::Duration duration;  // arrival to the end
  /// A finish reason (length, eos, stop) or an error code (cancelled,
  /// invalid_argument, unavailable, ...): kvserve_requests_total's outcome label.
  std::string outcome;
};

/// The line's text, without the logger's level and time prefix.
std::string FormatAccessLine(const AccessRecord& record);

/// Counts the request in kvserve_requests_total{api, outcome} and writes its
/// access-log line (info level).
void RecordRequestEnd(ServerMetrics& metrics, const AccessRecord& record);

}  // namespace kvserve
