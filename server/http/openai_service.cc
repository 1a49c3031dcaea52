#include "server/http/openai_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "server/request_mapping.h"

namespace kvserve::http {
namespace {

HttpReply JsonReply(int status, const nlohmann::json& body) {
  return HttpReply{status, "application/json", DumpJson(body), 0, ""};
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

HttpReply OpenAiService::Fail(const HttpError& error) {
  RecordOutcome(OutcomeLabel(error));
  return ErrorReply(error);
}

std::variant<HttpReply, StartedGeneration> OpenAiService::Handle(const std::string& method,
                                                                 const std::string& target,
                                                                 const std::string& body,
                                                                 std::function<void()> notify) {
  const std::string path = target.substr(0, target.find('?'));
  const bool get = method == "GET", post = method == "POST";
  if (path == "/health" && get) {
    if (draining()) return JsonReply(503, {{"status", "draining"}});
    return JsonReply(200, {{"status", "ok"}});
  }
  if (path == "/v1/models" && get) return Models();
  if (path == "/v1/completions" && post) {
    return Generate(Endpoint::kCompletions, body, std::move(notify));
  }
  if (path == "/v1/chat/completions" && post) {
    return Generate(Endpoint::kChat, body, std::move(notify));
  }
  const bool known = path == "/health" || path == "/v1/models" || path == "/v1/completions" ||
                     path == "/v1/chat/completions";
  HttpError error = ToHttpError(absl::NotFoundError(
      known ? absl::StrCat(method, " is not allowed on ", path)
            : absl::StrCat("no such endpoint: ", method, " ", path)));
  if (known) error.http_status = 405;
  return ErrorReply(error);
}

HttpReply OpenAiService::Models() const {
  const ModelInfo& info = engine_.info();
  nlohmann::json model = {{"id", served_model_name_},
                          {"object", "model"},
                          {"created", started_at_},
                          {"owned_by", "kvserve"},
                          {"root", info.model_name},
                          {"max_model_len", info.max_context}};
  return JsonReply(200, {{"object", "list"}, {"data", nlohmann::json::array({model})}});
}

std::variant<HttpReply, StartedGeneration> OpenAiService::Generate(Endpoint endpoint,
                                                                   const std::string& body,
                                                                   std::function<void()> notify) {
  if (draining()) return Fail(ToHttpError(absl::UnavailableError("the server is shutting down")));
  absl::StatusOr<OpenAiRequest> parsed = ParseOpenAiRequest(endpoint, body);
  if (!parsed.ok()) return Fail(ToHttpError(parsed.status()));
  OpenAiRequest& r = *parsed;
  if (!r.model.empty() && r.model != served_model_name_) {
    return Fail(ModelNotFound(r.model, served_model_name_));
  }
  if (!r.unknown_fields.empty()) {
    KV_LOG(DEBUG) << "ignoring unknown fields: " << absl::StrJoin(r.unknown_fields, ", ");
  }
  const bool chat = endpoint == Endpoint::kChat;
  const ParamNames names =
      chat ? ChatParamNames(r.max_tokens_name) : CompletionParamNames(r.max_tokens_name);
  v1::GenerateRequest generate = r.generate;
  if (chat) {
    absl::StatusOr<ChatPrompt> prompt =
        RenderChat(chat_, r.chat.messages(), /*tools_json=*/"", /*add_generation_prompt=*/true);
    if (!prompt.ok()) {
      HttpError error = ToHttpError(prompt.status(), names);
      // The conversation is at fault, also when the template refuses it
      // ("chat template: Unknown role: robot").
      if (error.code == absl::StatusCode::kInvalidArgument) error.param = "messages";
      return Fail(error);
    }
    *r.chat.mutable_sampling() = r.generate.sampling();
    *r.chat.mutable_stopping() = r.generate.stopping();
    generate = ToGenerateRequest(r.chat, *prompt, *chat_.formatter);
  }
  const std::string id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", next_id_.fetch_add(1));

  // Every choice is converted and validated before any is submitted.
  std::vector<Request> requests;
  for (int i = 0; i < r.n; ++i) {
    absl::StatusOr<Request> request =
        ToEngineRequest(generate, engine_, absl::InfiniteFuture());
    if (!request.ok()) return Fail(ToHttpError(request.status(), names));
    request->request_id = r.n == 1 ? id : absl::StrCat(id, "-", i);
    // Independent choices: each its own seed when the client fixed one.
    if (request->sampling.seed) *request->sampling.seed += i;
    requests.push_back(*std::move(request));
  }
  auto call = std::make_shared<GenerationCall>(std::move(notify), tracker_);
  for (int i = 0; i < r.n; ++i) {
    absl::Status submitted =
        engine_.Submit(std::move(requests[i]), std::make_shared<ChoiceSink>(call, i));
    if (!submitted.ok()) {
      call->Cancel();  // the choices already submitted end at the engine's next step
      engine_.Wake();
      return Fail(ToHttpError(submitted, names));
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
  context.tokenizer = engine_.tokenizer();
  return StartedGeneration{std::move(call),
                           std::make_unique<OpenAiResponseBuilder>(std::move(context)), r.stream};
}

}  // namespace kvserve::http
