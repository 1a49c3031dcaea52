#include "server/status_map.h"

#include "absl/strings/ascii.h"
#include "base/logging.h"

namespace kvserve {

grpc::Status ToGrpcStatus(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return grpc::Status::OK;
  if (status.code() == absl::StatusCode::kInternal) {
    KV_LOG(ERROR) << "internal error" << (context.empty() ? "" : " in ") << std::string(context)
                  << ": " << status;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

std::string OutcomeLabel(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return "ok";
    case grpc::StatusCode::CANCELLED: return "cancelled";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "deadline_exceeded";
    case grpc::StatusCode::INVALID_ARGUMENT: return "invalid_argument";
    case grpc::StatusCode::NOT_FOUND: return "not_found";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "resource_exhausted";
    case grpc::StatusCode::UNAVAILABLE: return "unavailable";
    default: return "error";
  }
}

}  // namespace kvserve
