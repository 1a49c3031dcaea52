#include "base/log_rate_limiter.h"

namespace kvserve {

LogRateLimiter::Decision LogRateLimiter::Admit(absl::string_view site, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = sites_.try_emplace(site);
  Site& s = it->second;
  if (inserted || now - s.window_start >= window_) {
    s.window_start = now;
    s.written = 0;
  }
  if (s.written >= max_lines_) {
    ++s.suppressed;
    return {};
  }
  ++s.written;
  return {true, std::exchange(s.suppressed, 0)};
}

}  // namespace kvserve
