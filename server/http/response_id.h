// Response ids of the OpenAI API ("cmpl-…", "chatcmpl-…"): random, like
// OpenAI's own, so that they never repeat across restarts or replicas (a
// client or log pipeline that keys on them would mix up two responses).
#pragma once

#include <string>
#include <string_view>

namespace kvserve::http {

/// Random alphanumerics after the prefix (OpenAI's length).
inline constexpr int kResponseIdRandomChars = 29;

/// `prefix` + kResponseIdRandomChars characters from [0-9A-Za-z], drawn from
/// the kernel's CSPRNG (getrandom).
std::string NewResponseId(std::string_view prefix);

}  // namespace kvserve::http
