// Bounds how often one log site may write: at most `max_lines` lines per
// `window`, the rest counted and reported in one line once the site writes
// again. For lines a client can trigger at will (issue 13 item 6: every
// invalid-UTF-8 request made protobuf write one ERROR line), so that a
// flood of bad requests cannot flood the log.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvserve {

class LogRateLimiter {
 public:
  LogRateLimiter(int max_lines, absl::Duration window) : max_lines_(max_lines), window_(window) {}

  struct Decision {
    bool write = false;
    /// Lines of this site dropped since it last wrote: report them before this line.
    int64_t suppressed = 0;
  };
  /// `site` names where the line comes from (file:line); thread-safe.
  Decision Admit(absl::string_view site, absl::Time now);

 private:
  struct Site {
    absl::Time window_start;
    int written = 0;
    int64_t suppressed = 0;
  };
  const int max_lines_;
  const absl::Duration window_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Site> sites_ ABSL_GUARDED_BY(mu_);  // code sites: few
};

}  // namespace kvserve
