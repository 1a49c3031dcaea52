// Finds a busy listening port before the model loads, so that a second
// kvserve on a port in use fails in milliseconds rather than after the load
// (and never shares the port: gRPC would otherwise set SO_REUSEPORT).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvserve {

/// A port the server will listen on, and the flag that set it.
struct PortToCheck {
  std::string flag;  // "port", "http_port", "metrics_port"
  std::string host;  // as the flag gives it: an address or a host name
  int port = 0;      // 0: any free port, < 0: not listening (both skipped)
};

/// Binds and listens on every port once, without SO_REUSEPORT, all at once
/// (so that two flags naming one port are found too), then closes them.
/// InvalidArgument for a port above 65535 or a host that does not resolve;
/// Unavailable, naming the flag, for a port another socket listens on.
absl::Status CheckPortsFree(const std::vector<PortToCheck>& ports);

}  // namespace kvserve
