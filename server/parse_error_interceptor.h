// A request whose bytes do not parse as its protobuf message (malformed, or
// invalid UTF-8 in a string field) never reaches our handlers: gRPC 1.51's
// callback API fails it with UNIMPLEMENTED and an empty message, hard-coded
// in its handlers (server_callback_handlers.h). This interceptor sees the
// parse fail (no message after POST_RECV_MESSAGE) and rewrites that status
// to INVALID_ARGUMENT naming the message type and, when protobuf said why,
// the field (issue 13 item 6; docs/errors.md).
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

namespace kvserve {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeParseErrorInterceptorFactory();

}  // namespace kvserve
