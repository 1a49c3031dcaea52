// The limits the gRPC server runs under (issue 13 item 1): without them a
// client could hold unbounded streams, memory and connections. Each field is
// a --grpc_* flag (server/flags.cc); docs/limits.md says why each default.
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace kvserve {

struct GrpcLimits {
  /// HTTP/2 streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
  int max_concurrent_streams = 256;
  /// gRPC's resource quota: memory its transports may use for buffers
  /// (under pressure it closes idle connections and then cancels streams).
  int memory_limit_mb = 1024;
  /// gRPC's resource quota: threads of its synchronous thread pools.
  int max_threads = 64;
  /// Ping an idle client after this long to find dead connections; drop the
  /// connection when the ping is not answered within keepalive_timeout_s.
  int keepalive_time_s = 60;
  int keepalive_timeout_s = 20;
  /// Clients may ping no more often than this; the max_ping_strikes-th
  /// ping too early closes the connection (GOAWAY ENHANCE_YOUR_CALM).
  int min_client_ping_interval_s = 10;
  int max_ping_strikes = 2;
  /// A connection with no call for this long is closed (GOAWAY).
  int max_connection_idle_s = 300;
  /// Every connection is closed after this long (GOAWAY; clients reconnect),
  /// its calls given max_connection_age_grace_s to finish.
  int max_connection_age_s = 3600;
  int max_connection_age_grace_s = 600;
  /// Seconds between handing freed heap memory back to the OS
  /// (server/memory_trimmer.h); 0: never.
  int malloc_trim_interval_s = 5;

  /// An error naming the --grpc_* flag and its range for a value out of range.
  absl::Status Validate() const;
};

/// Sets the limits on a server being built.
void ApplyGrpcLimits(const GrpcLimits& limits, grpc::ServerBuilder& builder);

}  // namespace kvserve
