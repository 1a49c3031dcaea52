#include "server/http/http_limits.h"

#include "absl/strings/str_cat.h"

namespace kvserve::http {

absl::Status HttpLimits::Validate() const {
  if (max_body_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_max_body_bytes must be >= 1024, got ", max_body_bytes));
  }
  if (max_header_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_max_header_bytes must be >= 1024, got ", max_header_bytes));
  }
  if (idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--http_idle_timeout_s must be > 0");
  }
  if (write_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--http_write_timeout_s must be > 0");
  }
  return absl::OkStatus();
}

}  // namespace kvserve::http
