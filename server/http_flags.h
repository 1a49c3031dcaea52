// Command-line flags of the OpenAI-compatible HTTP API (server/http).
#pragma once

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "server/http/http_server.h"

ABSL_DECLARE_FLAG(int, http_port);
ABSL_DECLARE_FLAG(std::string, http_host);
ABSL_DECLARE_FLAG(int, http_io_threads);
ABSL_DECLARE_FLAG(std::string, served_model_name);
ABSL_DECLARE_FLAG(int64_t, http_max_body_bytes);
ABSL_DECLARE_FLAG(int64_t, http_max_header_bytes);
ABSL_DECLARE_FLAG(double, http_idle_timeout_s);
ABSL_DECLARE_FLAG(double, http_write_timeout_s);
ABSL_DECLARE_FLAG(std::string, http_cors_origins);

namespace kvserve {

/// The HTTP server's options from the flags (chat access is the caller's).
http::HttpServerOptions HttpServerOptionsFromFlags();

}  // namespace kvserve
