// What one HTTP client may hold: request sizes and how long a connection may
// sit idle or stall a write. A slow or stalled client holds a socket and its
// buffers until these expire, never an engine slot beyond its own request.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kvserve::http {

struct HttpLimits {
  size_t max_body_bytes = 4 << 20;  // as gRPC's default message limit
  size_t max_header_bytes = 16 << 10;
  /// A keep-alive connection waiting for (the rest of) a request is closed after this.
  absl::Duration idle_timeout = absl::Seconds(60);
  /// A response write that makes no progress for this long closes the
  /// connection (and so cancels its request).
  absl::Duration write_timeout = absl::Seconds(30);

  absl::Status Validate() const;
};

}  // namespace kvserve::http
