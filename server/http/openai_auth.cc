// Bearer-token authentication of the HTTP API (docs/security.md): every
// request but GET /health, known path or not (an unauthenticated client
// learns nothing of the routes), answers 401 in OpenAI's error shape with
// "WWW-Authenticate: Bearer" unless it carries a configured token.
#include "server/http/openai_service.h"

namespace kvserve::http {

std::optional<HttpReply> OpenAiService::Authenticate(
    const std::string& target, const std::vector<std::string_view>& authorization) const {
  if (auth_ == nullptr) return std::nullopt;
  if (target.substr(0, target.find('?')) == "/health") return std::nullopt;
  AuthResult result = AuthResult::kMalformed;
  if (authorization.size() <= 1) {
    result = auth_->Check(authorization.empty() ? std::nullopt
                                                : std::optional(authorization.front()));
  }
  if (result == AuthResult::kAccepted) return std::nullopt;
  metrics_.RecordAuthFailure(result, Api::kHttp);
  // OpenAI's own answers: type invalid_request_error; code invalid_api_key for
  // a wrong key, null when none was sent.
  HttpError error;
  error.http_status = 401;
  error.code = absl::StatusCode::kUnauthenticated;
  error.message = AuthFailureMessage(result);
  error.type = "invalid_request_error";
  if (result != AuthResult::kMissing) error.code_name = "invalid_api_key";
  HttpReply reply = ErrorReply(error);
  reply.www_authenticate = result == AuthResult::kMissing
                               ? "Bearer"
                               : "Bearer error=\"invalid_token\"";
  return reply;
}

}  // namespace kvserve::http
