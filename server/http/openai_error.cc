#include "server/http/openai_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/types/optional.h"
#include "base/logging.h"

namespace kvserve::http {
namespace {

// Longer gRPC names first, so "stopping.stop_token_ids" is not read as
// "stopping.stop" + "_token_ids".
ParamNames CommonNames(const std::string& max_tokens_name, const std::string& logprobs_name,
                       const std::string& prompt_name) {
  return {{"sampling.min_new_tokens", "min_tokens"},
          {"stopping.max_new_tokens", max_tokens_name},
          {"stopping.stop_token_ids", "stop_token_ids"},
          {"stopping.stop", "stop"},
          {"sampling.temperature", "temperature"},
          {"sampling.top_k", "top_k"},
          {"sampling.top_p", "top_p"},
          {"sampling.repetition_penalty", "repetition_penalty"},
          {"sampling.presence_penalty", "presence_penalty"},
          {"sampling.frequency_penalty", "frequency_penalty"},
          {"sampling.min_p", "min_p"},
          {"sampling.logprobs", logprobs_name},
          {"token_ids.ids", prompt_name}};
}

std::string TypeFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound: return "invalid_request_error";
    case absl::StatusCode::kResourceExhausted: return "rate_limit_error";
    case absl::StatusCode::kUnavailable: return "service_unavailable";
    case absl::StatusCode::kDeadlineExceeded: return "timeout";
    default: return "server_error";
  }
}

int HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition: return 400;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kCancelled: return 499;  // the client is gone; never read
    default: return 500;
  }
}

// The status payload that carries an OpenAI error code through absl::Status.
constexpr char kOpenAiCodePayload[] = "kvserve.dev/openai-error-code";

}  // namespace

absl::Status UnsupportedParameter(const std::string& message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kOpenAiCodePayload, absl::Cord("unsupported_parameter"));
  return status;
}

ParamNames CompletionParamNames(const std::string& max_tokens_name) {
  return CommonNames(max_tokens_name, "logprobs", "prompt");
}

ParamNames ChatParamNames(const std::string& max_tokens_name) {
  return CommonNames(max_tokens_name, "top_logprobs", "messages");
}

HttpError ToHttpError(const absl::Status& status, const ParamNames& names) {
  HttpError error;
  error.code = status.code();
  error.http_status = HttpStatusFor(status.code());
  error.type = TypeFor(status.code());
  error.message = std::string(status.message());
  if (status.code() == absl::StatusCode::kInternal) {
    KV_LOG(ERROR) << "internal error in an HTTP request: " << status;
  }
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    error.retry_after_s = 1;
    error.code_name = "queue_full";
  }
  if (absl::optional<absl::Cord> code = status.GetPayload(kOpenAiCodePayload)) {
    error.code_name = std::string(*code);
  }
  if (status.code() != absl::StatusCode::kInvalidArgument) return error;
  // The shared mapping names its text input "text" (request_mapping.cc).
  if (absl::StartsWith(error.message, "text ") || absl::StartsWith(error.message, "text:")) {
    error.message = absl::StrCat("prompt", error.message.substr(4));
  }
  for (const auto& [grpc_name, http_name] : names) {
    error.message = absl::StrReplaceAll(error.message, {{grpc_name, http_name}});
  }
  // The parameter at fault: the first of the table's names that appears (the
  // table lists min_tokens and max_tokens before prompt, so "prompt (5) +
  // max_tokens (9) exceeds ..." blames max_tokens).
  for (const auto& [grpc_name, http_name] : names) {
    if (error.message.find(http_name) != std::string::npos) {
      error.param = http_name;
      break;
    }
  }
  if (error.param.empty()) {
    // Our own parser's messages start with the parameter's name.
    error.param = error.message.substr(0, error.message.find_first_of(" [.:"));
  }
  return error;
}

HttpError ModelNotFound(const std::string& requested, const std::string& served) {
  HttpError error = ToHttpError(absl::NotFoundError(absl::StrCat(
      "model: '", requested, "' does not exist; this server serves '", served, "'")));
  error.param = "model";
  error.code_name = "model_not_found";
  return error;
}

nlohmann::json ErrorBody(const HttpError& error) {
  nlohmann::json body = {{"message", error.message},
                         {"type", error.type},
                         {"param", nullptr},
                         {"code", nullptr}};
  if (!error.param.empty()) body["param"] = error.param;
  if (!error.code_name.empty()) body["code"] = error.code_name;
  return {{"error", body}};
}

std::string OutcomeLabel(const HttpError& error) {
  switch (error.code) {
    case absl::StatusCode::kCancelled: return "cancelled";
    case absl::StatusCode::kDeadlineExceeded: return "deadline_exceeded";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition: return "invalid_argument";
    case absl::StatusCode::kNotFound: return "not_found";
    case absl::StatusCode::kResourceExhausted: return "resource_exhausted";
    case absl::StatusCode::kUnavailable: return "unavailable";
    default: return "error";
  }
}

}  // namespace kvserve::http
