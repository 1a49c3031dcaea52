// Errors of the OpenAI-compatible API: an absl::Status (from the request
// parser, the shared request mapping or the engine) becomes an HTTP status
// and OpenAI's error object {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace kvserve::http {

struct HttpError {
  int http_status = 500;
  absl::StatusCode code = absl::StatusCode::kInternal;  // for the outcome metric
  std::string message;
  std::string type;   // invalid_request_error, rate_limit_error, ...
  std::string param;  // the request parameter at fault; empty: none
  std::string code_name;  // OpenAI's "code" (model_not_found, ...); empty: null
  int retry_after_s = 0;  // > 0: sent as Retry-After
};

/// The engine and the gRPC mapping name fields as in the gRPC API
/// ("sampling.temperature"); the HTTP client set "temperature". Pairs of
/// (gRPC name, HTTP name), checked in order: the first HTTP name that
/// appears in the translated message is the error's `param`.
using ParamNames = std::vector<std::pair<std::string, std::string>>;

/// The names of /v1/completions (`max_tokens_name` is whichever of max_tokens
/// and max_completion_tokens the client used).
ParamNames CompletionParamNames(const std::string& max_tokens_name);
/// The names of /v1/chat/completions (logprobs → top_logprobs, prompt → messages).
ParamNames ChatParamNames(const std::string& max_tokens_name);

/// Maps any status: INVALID_ARGUMENT and FAILED_PRECONDITION → 400,
/// NOT_FOUND → 404, RESOURCE_EXHAUSTED → 429 (Retry-After: 1),
/// UNAVAILABLE → 503, DEADLINE_EXCEEDED → 504, the rest → 500.
HttpError ToHttpError(const absl::Status& status, const ParamNames& names = {});

/// A parameter of OpenAI's that kvserve does not implement and that would
/// change the output: INVALID_ARGUMENT carrying OpenAI's code
/// "unsupported_parameter" (ToHttpError sets it). `message` starts with the
/// parameter's name, as every parser message does.
absl::Status UnsupportedParameter(const std::string& message);

/// A 404 for a `model` that is not the served one.
HttpError ModelNotFound(const std::string& requested, const std::string& served);

nlohmann::json ErrorBody(const HttpError& error);

/// The kvserve_requests_total outcome label of a request that ended with `error`.
std::string OutcomeLabel(const HttpError& error);

}  // namespace kvserve::http
