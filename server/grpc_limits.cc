#include "server/grpc_limits.h"

#include <grpc/grpc.h>
#include <grpcpp/resource_quota.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace kvserve {
namespace {

absl::Status CheckRange(const char* flag, int value, int low, int high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be in [", low, ", ", high, "], got ", value));
}

constexpr int kDay = 24 * 3600;

int Millis(int seconds) { return seconds * 1000; }  // seconds <= kDay: fits an int

}  // namespace

absl::Status GrpcLimits::Validate() const {
  RETURN_IF_ERROR(CheckRange("grpc_max_concurrent_streams", max_concurrent_streams, 1, 1 << 20));
  RETURN_IF_ERROR(CheckRange("grpc_memory_limit_mb", memory_limit_mb, 16, 1 << 20));
  RETURN_IF_ERROR(CheckRange("grpc_max_threads", max_threads, 2, 1 << 14));
  RETURN_IF_ERROR(CheckRange("grpc_keepalive_time_s", keepalive_time_s, 1, kDay));
  RETURN_IF_ERROR(CheckRange("grpc_keepalive_timeout_s", keepalive_timeout_s, 1, kDay));
  RETURN_IF_ERROR(
      CheckRange("grpc_min_client_ping_interval_s", min_client_ping_interval_s, 1, kDay));
  RETURN_IF_ERROR(CheckRange("grpc_max_ping_strikes", max_ping_strikes, 0, 1000));
  RETURN_IF_ERROR(CheckRange("grpc_max_connection_idle_s", max_connection_idle_s, 1, kDay));
  RETURN_IF_ERROR(CheckRange("grpc_max_connection_age_s", max_connection_age_s, 1, kDay));
  RETURN_IF_ERROR(
      CheckRange("grpc_max_connection_age_grace_s", max_connection_age_grace_s, 0, kDay));
  RETURN_IF_ERROR(CheckRange("malloc_trim_interval_s", malloc_trim_interval_s, 0, kDay));
  return absl::OkStatus();
}

void ApplyGrpcLimits(const GrpcLimits& limits, grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams);

  grpc::ResourceQuota quota("kvserve");
  quota.Resize(size_t(limits.memory_limit_mb) << 20);
  quota.SetMaxThreads(limits.max_threads);
  builder.SetResourceQuota(quota);

  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(limits.keepalive_time_s));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(limits.keepalive_timeout_s));
  // Clients that keep idle connections alive with pings (at most one per
  // min_client_ping_interval_s) are fine; the strikes are for floods.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             Millis(limits.min_client_ping_interval_s));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, limits.max_ping_strikes);

  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             Millis(limits.max_connection_idle_s));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, Millis(limits.max_connection_age_s));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             Millis(limits.max_connection_age_grace_s));
}

}  // namespace kvserve
