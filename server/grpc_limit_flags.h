// The --grpc_* flags, in a file of their own: the gRPC server's limits.
#pragma once

#include "server/grpc_limits.h"

namespace kvserve {

/// The limits the --grpc_* flags ask for (not yet validated).
GrpcLimits GrpcLimitsFromFlags();

}  // namespace kvserve
