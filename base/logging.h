// Minimal leveled logging to stderr (Debian's Abseil 20220623 has no absl/log).
//
//   KV_LOG(INFO) << "serving on " << address;
//
// One line per statement, written with a single write so that lines from
// different threads do not interleave. FATAL aborts after writing.
#pragma once

#include <sstream>
#include <string_view>

namespace kvserve {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

/// Messages below this level are dropped (default: kInfo).
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace kvserve

#define KV_LOG_LEVEL_DEBUG ::kvserve::LogLevel::kDebug
#define KV_LOG_LEVEL_INFO ::kvserve::LogLevel::kInfo
#define KV_LOG_LEVEL_WARNING ::kvserve::LogLevel::kWarning
#define KV_LOG_LEVEL_ERROR ::kvserve::LogLevel::kError
#define KV_LOG_LEVEL_FATAL ::kvserve::LogLevel::kFatal

#define KV_LOG(level)                                       \
  if (KV_LOG_LEVEL_##level < ::kvserve::MinLogLevel()) {    \
  } else                                                    \
    ::kvserve::LogMessage(KV_LOG_LEVEL_##level, __FILE__, __LINE__).stream()

/// Internal invariant: a violated one is a bug in kvserve, never a bad request.
#define KV_CHECK(cond) \
  if (cond) {          \
  } else               \
    KV_LOG(FATAL) << "check failed: " #cond " "
