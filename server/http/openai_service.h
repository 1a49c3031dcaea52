// The OpenAI-compatible endpoints, independent of the transport: a request's
// method, path and body in; a complete reply, or a generation started in the
// engine, out. The HTTP connection (http_connection.h) does the I/O.
//
//   GET  /health               200 serving, 503 draining
//   GET  /v1/models            the served model
//   GET  /v1/models/{id}       the served model, if {id} names it
//   POST /v1/completions       prompt (text or token ids)
//   POST /v1/chat/completions  messages, rendered with the model's chat template
//   OPTIONS (any of these)     204 with Allow (CORS preflights: cors_policy.h)
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/core/engine.h"
#include "server/access_log.h"
#include "server/auth/bearer_tokens.h"
#include "server/chat_mapping.h"
#include "server/http/cors_policy.h"
#include "server/http/generation_call.h"
#include "server/http/openai_error.h"
#include "server/http/openai_response.h"
#include "server/server_metrics.h"

namespace kvserve::http {

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";  // empty: none (204)
  std::string body;
  int retry_after_s = 0;  // > 0: a Retry-After header
  std::string www_authenticate;  // non-empty: a WWW-Authenticate header (401)
  HeaderList headers;            // more: Allow, Access-Control-*
};

/// A generation the engine is running; the connection feeds `builder` with
/// the call's events and writes what it produces.
struct StartedGeneration {
  std::shared_ptr<GenerationCall> call;
  std::unique_ptr<OpenAiResponseBuilder> builder;
  bool stream = false;
  /// Its access-log line so far (route, id, model, prompt tokens); the
  /// connection adds the output and the end.
  AccessRecord access;
  absl::Time start;
};

class OpenAiService {
 public:
  OpenAiService(Engine& engine, ChatAccess chat, ServerMetrics& metrics,
                std::string served_model_name, std::shared_ptr<CallTracker> tracker);

  /// `notify` is handed to the GenerationCall (called on the engine's output thread).
  std::variant<HttpReply, StartedGeneration> Handle(const std::string& method,
                                                    const std::string& target,
                                                    const std::string& body,
                                                    std::function<void()> notify);

  /// Before serving (not synchronized): which browser origins may call the API.
  void SetCorsPolicy(CorsPolicy cors) { cors_ = std::move(cors); }
  const CorsPolicy& cors() const { return cors_; }

  /// Before serving (not synchronized): every request but GET /health needs one of `tokens` as
  /// "Authorization: Bearer <token>" (openai_auth.cc).
  void RequireBearerTokens(std::shared_ptr<const BearerTokens> tokens) { auth_ = std::move(tokens); }
  /// Before Handle: the 401 reply, or nullopt when the request may go on.
  /// `authorization`: every Authorization header's value (more than one is refused).
  std::optional<HttpReply> Authenticate(const std::string& target,
                                        const std::vector<std::string_view>& authorization) const;

  /// Draining: /health and new generations answer 503.
  void BeginDrain() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  Engine& engine() { return engine_; }
  /// Counts the generation's outcome and writes its access-log line.
  void RecordEnd(const AccessRecord& access) { RecordRequestEnd(metrics_, access); }

 private:
  std::variant<HttpReply, StartedGeneration> Generate(Endpoint endpoint, const std::string& body,
                                                      std::function<void()> notify);
  /// An error reply for a generation, counted and logged with `access` as its outcome.
  HttpReply Fail(const HttpError& error, AccessRecord access, absl::Time start);
  HttpReply Models() const;
  HttpReply Model(const std::string& id) const;
  nlohmann::json ModelObject() const;

  Engine& engine_;
  ChatAccess chat_;
  ServerMetrics& metrics_;
  std::string served_model_name_;
  std::shared_ptr<CallTracker> tracker_;
  std::shared_ptr<const BearerTokens> auth_;  // null: no authentication
  CorsPolicy cors_;
  std::atomic<bool> draining_{false};
  int64_t started_at_ = 0;  // Unix seconds: /v1/models' "created"
};

/// The reply for an error (no outcome counted).
HttpReply ErrorReply(const HttpError& error);

}  // namespace kvserve::http
