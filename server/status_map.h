// The one place where engine Status becomes a gRPC status.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kvserve {

/// Same code (absl and gRPC share the numbering), same message. INTERNAL
/// errors are bugs and are logged with `context`.
grpc::Status ToGrpcStatus(const absl::Status& status, absl::string_view context = "");

/// The `outcome` label of kvserve_requests_total for an RPC that ended with
/// `status` (OK outcomes are named by finish reason instead).
std::string OutcomeLabel(const grpc::Status& status);

}  // namespace kvserve
