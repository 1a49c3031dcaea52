#include "server/http_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(int, http_port, 8000,
          "OpenAI-compatible HTTP API port (0: any free port, -1: no HTTP API).");
ABSL_FLAG(std::string, http_host, "0.0.0.0", "Address the HTTP API listens on.");
ABSL_FLAG(int, http_io_threads, 2,
          "Threads running the HTTP server's event loop (connections are event-driven: "
          "thousands of streams need no more threads).");
ABSL_FLAG(std::string, served_model_name, "",
          "The model name clients send as `model` and /v1/models lists (default: the model's "
          "name as GetModelInfo reports it).");
ABSL_FLAG(int64_t, http_max_body_bytes, 4 << 20, "Largest HTTP request body (413 beyond).");
ABSL_FLAG(int64_t, http_max_header_bytes, 16 << 10,
          "Largest HTTP request header block (431 beyond).");
ABSL_FLAG(double, http_idle_timeout_s, 60,
          "An HTTP connection that sends no complete request for this long is closed.");
ABSL_FLAG(std::string, http_cors_origins, "",
          "Browser origins allowed to call the HTTP API (CORS): a comma-separated list such as "
          "https://app.example.com,http://localhost:3000, or * for any; empty: none (no CORS "
          "headers). Requests still need their bearer token (--auth_token_file).");
ABSL_FLAG(double, http_write_timeout_s, 30,
          "An HTTP response write that makes no progress for this long closes the connection "
          "(and cancels its request).");

namespace kvserve {

http::HttpServerOptions HttpServerOptionsFromFlags() {
  http::HttpServerOptions o;
  o.host = absl::GetFlag(FLAGS_http_host);
  o.port = absl::GetFlag(FLAGS_http_port);
  o.io_threads = absl::GetFlag(FLAGS_http_io_threads);
  o.served_model_name = absl::GetFlag(FLAGS_served_model_name);
  o.limits.max_body_bytes = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_http_max_body_bytes)));
  o.limits.max_header_bytes =
      static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_http_max_header_bytes)));
  o.limits.idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_idle_timeout_s));
  o.limits.write_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_write_timeout_s));
  o.cors_origins = absl::GetFlag(FLAGS_http_cors_origins);
  return o;
}

}  // namespace kvserve
