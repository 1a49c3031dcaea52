#include "server/library_logs.h"

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log_rate_limiter.h"
#include "base/logging.h"

namespace kvserve {
namespace {

LogRateLimiter& Limiter() {
  static LogRateLimiter* limiter = new LogRateLimiter(kLibraryLogLinesPerMinute, absl::Minutes(1));
  return *limiter;
}

thread_local std::string last_parse_error;

void Write(LogLevel level, const char* library, const char* file, int line,
           std::string_view message) {
  if (level < MinLogLevel()) return;
  const LogRateLimiter::Decision decision =
      Limiter().Admit(absl::StrCat(file, ":", line), absl::Now());
  if (!decision.write) return;
  if (decision.suppressed > 0) {
    LogMessage(level, file, line).stream()
        << library << ": suppressed " << decision.suppressed
        << " similar lines from this site (at most " << kLibraryLogLinesPerMinute
        << " a minute)";
  }
  // Not KV_LOG: the line names the library's file, and FATAL is the library's to act on.
  LogMessage(level == LogLevel::kFatal ? LogLevel::kError : level, file, line).stream()
      << library << ": " << message;
}

void OnGprLog(gpr_log_func_args* args) {
  LogLevel level = LogLevel::kError;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = LogLevel::kDebug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = LogLevel::kInfo;
  Write(level, "grpc", args->file, args->line, args->message);
}

void OnProtobufLog(google::protobuf::LogLevel protobuf_level, const char* file, int line,
                   const std::string& message) {
  // The parse failures a request can cause (invalid UTF-8 in a string field)
  // end in this phrase; the gRPC interceptor hands the reason to the client.
  constexpr std::string_view kParsing = " when parsing a protocol buffer";
  if (const size_t at = message.find(kParsing); at != std::string::npos) {
    last_parse_error = message.substr(0, at);
  }
  LogLevel level = LogLevel::kError;
  if (protobuf_level == google::protobuf::LOGLEVEL_INFO) level = LogLevel::kInfo;
  if (protobuf_level == google::protobuf::LOGLEVEL_WARNING) level = LogLevel::kWarning;
  if (protobuf_level == google::protobuf::LOGLEVEL_FATAL) level = LogLevel::kFatal;
  Write(level, "protobuf", file, line, message);
}

}  // namespace

void InstallLibraryLogHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    gpr_set_log_function(OnGprLog);
    google::protobuf::SetLogHandler(OnProtobufLog);
  });
}

std::string TakeLastParseErrorOnThisThread() { return std::exchange(last_parse_error, {}); }

}  // namespace kvserve
