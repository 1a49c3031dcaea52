#include "server/http/openai_service.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "server/http/response_id.h"
#include "server/request_mapping.h"
#include "server/tool_choice.h"

namespace kvserve::http {
namespace {

HttpReply JsonReply(int status, const nlohmann::json& body) {
  return HttpReply{status, "application/json", DumpJson(body), 0, "", {}};
}

constexpr absl::string_view kModelPrefix = "/v1/models/";

// The method a known path answers (OPTIONS aside); empty for an unknown path.
absl::string_view MethodOf(absl::string_view path) {
  if (path == "/health" || path == "/v1/models") return "GET";
  if (path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix) {
    return "GET";
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") return "POST";
  return "";
}

// A path segment's %XX escapes decoded (a model id may be sent with its '/'
// escaped); a malformed escape is kept as it is.
std::string PercentDecode(absl::string_view s) {
  auto hex = [](char c) {
    return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && absl::ascii_isxdigit(s[i + 1]) &&
        absl::ascii_isxdigit(s[i + 2])) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

HttpReply ErrorReply(const HttpError& error) {
  HttpReply reply = JsonReply(error.http_status, ErrorBody(error));
  reply.retry_after_s = error.retry_after_s;
  return reply;
}

OpenAiService::OpenAiService(Engine& engine, ChatAccess chat, ServerMetrics& metrics,
                             std::string served_model_name, std::shared_ptr<CallTracker> tracker)
    : engine_(engine),
      chat_(std::move(chat)),
      metrics_(metrics),
      served_model_name_(std::move(served_model_name)),
      tracker_(std::move(tracker)),
      started_at_(absl::ToUnixSeconds(absl::Now())) {}

HttpReply OpenAiService::Fail(const HttpError& error, AccessRecord access, absl::Time start) {
  access.outcome = OutcomeLabel(error);
  access.duration = absl::Now() - start;
  RecordEnd(access);
  return ErrorReply(error);
}

std::variant<HttpReply, StartedGeneration> OpenAiService::Handle(const std::string& method,
                                                                 const std::string& target,
                                                                 const std::string& body,
                                                                 std::function<void()> notify) {
  const std::string path = target.substr(0, target.find('?'));
  const absl::string_view allowed = MethodOf(path);
  if (allowed.empty()) {
    return ErrorReply(
        ToHttpError(absl::NotFoundError(absl::StrCat("no such endpoint: ", method, " ", path))));
  }
  const std::string allow = absl::StrCat(allowed, ", OPTIONS");
  if (method == "OPTIONS") return HttpReply{204, "", "", 0, "", {{"Allow", allow}}};
  if (method != allowed) {
    HttpError error = ToHttpError(
        absl::NotFoundError(absl::StrCat(method, " is not allowed on ", path, "; use ", allowed)));
    error.http_status = 405;
    HttpReply reply = ErrorReply(error);
    reply.headers.emplace_back("Allow", allow);
    return reply;
  }
  if (path == "/health") {
    if (draining()) return JsonReply(503, {{"status", "draining"}});
    return JsonReply(200, {{"status", "ok"}});
  }
  if (path == "/v1/models") return Models();
  if (path == "/v1/completions") return Generate(Endpoint::kCompletions, body, std::move(notify));
  if (path == "/v1/chat/completions") return Generate(Endpoint::kChat, body, std::move(notify));
  return Model(PercentDecode(absl::string_view(path).substr(kModelPrefix.size())));
}

nlohmann::json OpenAiService::ModelObject() const {
  const ModelInfo& info = engine_.info();
  // clang-format off
  return {{"id", served_model_name_},
          {"object", "model"},
          {"created", started_at_},
          {"owned_by", "kvserve"},
          {"root", info.model_name},
          {"max_model_len", info.max_context}};
  // clang-format on
}

HttpReply OpenAiService::Models() const {
  return JsonReply(200, {{"object", "list"}, {"data", nlohmann::json::array({ModelObject()})}});
}

HttpReply OpenAiService::Model(const std::string& id) const {
  if (id != served_model_name_) return ErrorReply(ModelNotFound(id, served_model_name_));
  return JsonReply(200, ModelObject());
}

std::variant<HttpReply, StartedGeneration> OpenAiService::Generate(Endpoint endpoint,
                                                                   const std::string& body,
                                                                   std::function<void()> notify) {
  const absl::Time start = absl::Now();
  AccessRecord access;
  access.api = Api::kHttp;
  access.route = endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
  access.model = served_model_name_;
  auto fail = [&](const HttpError& error) { return Fail(error, access, start); };
  if (draining()) return fail(ToHttpError(absl::UnavailableError("the server is shutting down")));
  absl::StatusOr<OpenAiRequest> parsed = ParseOpenAiRequest(endpoint, body);
  if (!parsed.ok()) return fail(ToHttpError(parsed.status()));
  OpenAiRequest& r = *parsed;
  access.stream = r.stream;
  if (!r.model.empty() && r.model != served_model_name_) {
    return fail(ModelNotFound(r.model, served_model_name_));
  }
  ApplyHttpSamplingDefaults(engine_.info().sampling_defaults, *r.generate.mutable_sampling());
  if (!r.unknown_fields.empty()) {
    KV_LOG(DEBUG) << "ignoring unknown fields: " << absl::StrJoin(r.unknown_fields, ", ");
  }
  const bool chat = endpoint == Endpoint::kChat;
  ParamNames names =
      chat ? ChatParamNames(r.max_tokens_name) : CompletionParamNames(r.max_tokens_name);
  if (!r.constraint_field.empty()) {
    for (const char* grpc_name : {"sampling.json_schema", "sampling.regex", "sampling.grammar",
                                  "sampling.choice", "sampling.json_object"}) {
      names.push_back({grpc_name, r.constraint_field});
    }
  }
  v1::GenerateRequest generate = r.generate;
  tool_calls::ToolCallPlan tool_plan;
  if (chat) {
    *r.chat.mutable_sampling() = r.generate.sampling();
    *r.chat.mutable_stopping() = r.generate.stopping();
    // May set the sampling constraint (tool_choice "required" or a function).
    absl::StatusOr<ToolCallSetup> tools = PrepareToolCalls(chat_, r.chat, "tools");
    if (!tools.ok()) return fail(ToHttpError(tools.status(), names));
    tool_plan = tools->plan;
    if (tool_plan.mode == tool_calls::ToolCallMode::kNamed ||
        tool_plan.mode == tool_calls::ToolCallMode::kRequired) {
      // The constraint is made of the tools' parameters schemas: a schema
      // that does not compile is the tools' fault.
      names.push_back({"sampling.json_schema", "tools"});
    }
    absl::StatusOr<ChatPrompt> prompt = RenderChat(chat_, r.chat.messages(), tools->tools_json,
                                                   /*add_generation_prompt=*/true);
    if (!prompt.ok()) {
      HttpError error = ToHttpError(prompt.status(), names);
      // The conversation is at fault, also when the template refuses it
      // ("chat template: Unknown role: robot").
      if (error.code == absl::StatusCode::kInvalidArgument) error.param = "messages";
      return fail(error);
    }
    generate = ToGenerateRequest(r.chat, *prompt, *chat_.formatter);
  }
  const std::string id = NewResponseId(chat ? "chatcmpl-" : "cmpl-");
  access.request_id = id;

  // Every choice is converted and validated before any is submitted.
  std::vector<Request> requests;
  for (int i = 0; i < r.n; ++i) {
    absl::StatusOr<Request> request =
        ToEngineRequest(generate, engine_, absl::InfiniteFuture());
    if (!request.ok()) {
      absl::Status status = request.status();
      // A constraint past the size or compile-time limit is the request's
      // fault, not a busy server: 400, not 429's "retry later".
      if (status.code() == absl::StatusCode::kResourceExhausted &&
          absl::StartsWith(status.message(), "sampling.")) {
        status = absl::InvalidArgumentError(status.message());
      }
      return fail(ToHttpError(status, names));
    }
    access.prompt_tokens = static_cast<int64_t>(request->prompt.size());
    request->request_id = r.n == 1 ? id : absl::StrCat(id, "-", i);
    // Independent choices: each its own seed when the client fixed one.
    if (request->sampling.seed) *request->sampling.seed += i;
    requests.push_back(*std::move(request));
  }
  std::string echo;
  if (r.echo) {
    // The prompt as sent; token ids as the tokenizer spells them.
    if (generate.has_text()) {
      echo = generate.text();
    } else if (engine_.tokenizer() != nullptr) {
      echo = engine_.tokenizer()->Decode(requests[0].prompt, /*skip_special_tokens=*/false);
    } else {
      return fail(ToHttpError(absl::InvalidArgumentError(
          "echo of a token-id prompt needs a tokenizer, and this model has none")));
    }
  }
  // Each choice gets the room of a single request (streams only: a JSON
  // reply is written at the end, nothing is counted for it).
  auto call = std::make_shared<GenerationCall>(std::move(notify), tracker_,
                                               engine_.max_unsent_tokens() * r.n);
  for (int i = 0; i < r.n; ++i) {
    absl::Status submitted =
        engine_.Submit(std::move(requests[i]), std::make_shared<ChoiceSink>(call, i));
    if (!submitted.ok()) {
      call->Cancel();  // the choices already submitted end at the engine's next step
      engine_.Wake();
      return fail(ToHttpError(submitted, names));
    }
  }
  ResponseContext context;
  context.endpoint = endpoint;
  context.id = id;
  context.created = absl::ToUnixSeconds(absl::Now());
  context.model = served_model_name_;
  context.n = r.n;
  context.stream = r.stream;
  context.include_usage = r.stream && r.include_usage;
  context.logprobs = r.logprobs;
  context.echo = std::move(echo);
  context.tokenizer = engine_.tokenizer();
  context.tools = std::move(tool_plan);
  return StartedGeneration{std::move(call),
                           std::make_unique<OpenAiResponseBuilder>(std::move(context)), r.stream,
                           std::move(access), start};
}

}  // namespace kvserve::http
