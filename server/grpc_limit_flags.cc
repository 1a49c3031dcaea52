#include "server/grpc_limit_flags.h"

#include "absl/flags/flag.h"

// Defaults and the reasons for them: docs/limits.md.
ABSL_FLAG(int, grpc_max_concurrent_streams, kvserve::GrpcLimits().max_concurrent_streams,
          "HTTP/2 streams one client connection may have open at once; a client that "
          "multiplexes more waits on its side for a free stream.");
ABSL_FLAG(int, grpc_memory_limit_mb, kvserve::GrpcLimits().memory_limit_mb,
          "gRPC's resource quota: memory (MiB) its connections may use for buffers; under "
          "pressure gRPC closes idle connections, then cancels streams.");
ABSL_FLAG(int, grpc_max_threads, kvserve::GrpcLimits().max_threads,
          "gRPC's resource quota: threads of its synchronous thread pools.");
ABSL_FLAG(int, grpc_keepalive_time_s, kvserve::GrpcLimits().keepalive_time_s,
          "Ping a client whose connection has been quiet this long, to find dead connections.");
ABSL_FLAG(int, grpc_keepalive_timeout_s, kvserve::GrpcLimits().keepalive_timeout_s,
          "Close a connection whose keepalive ping is not answered within this.");
ABSL_FLAG(int, grpc_min_client_ping_interval_s, kvserve::GrpcLimits().min_client_ping_interval_s,
          "Clients may ping at most once per this interval when no data flows; each earlier "
          "ping is a strike.");
ABSL_FLAG(int, grpc_max_ping_strikes, kvserve::GrpcLimits().max_ping_strikes,
          "Ping strikes after which a connection is closed (GOAWAY ENHANCE_YOUR_CALM; 0: no "
          "limit).");
ABSL_FLAG(int, grpc_max_connection_idle_s, kvserve::GrpcLimits().max_connection_idle_s,
          "Close a connection that has had no call for this long.");
ABSL_FLAG(int, grpc_max_connection_age_s, kvserve::GrpcLimits().max_connection_age_s,
          "Close every connection after this long (clients reconnect).");
ABSL_FLAG(int, grpc_max_connection_age_grace_s, kvserve::GrpcLimits().max_connection_age_grace_s,
          "Calls on a connection closed for its age get this long to finish.");
ABSL_FLAG(int, malloc_trim_interval_s, kvserve::GrpcLimits().malloc_trim_interval_s,
          "Seconds between handing freed heap memory back to the OS (after a burst of "
          "cancelled streams, glibc would keep it); 0: never.");

namespace kvserve {

GrpcLimits GrpcLimitsFromFlags() {
  GrpcLimits l;
  l.max_concurrent_streams = absl::GetFlag(FLAGS_grpc_max_concurrent_streams);
  l.memory_limit_mb = absl::GetFlag(FLAGS_grpc_memory_limit_mb);
  l.max_threads = absl::GetFlag(FLAGS_grpc_max_threads);
  l.keepalive_time_s = absl::GetFlag(FLAGS_grpc_keepalive_time_s);
  l.keepalive_timeout_s = absl::GetFlag(FLAGS_grpc_keepalive_timeout_s);
  l.min_client_ping_interval_s = absl::GetFlag(FLAGS_grpc_min_client_ping_interval_s);
  l.max_ping_strikes = absl::GetFlag(FLAGS_grpc_max_ping_strikes);
  l.max_connection_idle_s = absl::GetFlag(FLAGS_grpc_max_connection_idle_s);
  l.max_connection_age_s = absl::GetFlag(FLAGS_grpc_max_connection_age_s);
  l.max_connection_age_grace_s = absl::GetFlag(FLAGS_grpc_max_connection_age_grace_s);
  l.malloc_trim_interval_s = absl::GetFlag(FLAGS_malloc_trim_interval_s);
  return l;
}

}  // namespace kvserve
