// The chat RPCs: render the conversation with the model's template, then run
// it through the same reactors as Generate / GenerateStream.
#include "server/generate_reactors.h"
#include "server/inference_service.h"
#include "server/status_map.h"
#include "server/tool_choice.h"

namespace kvserve {
namespace {

// A stream refused before it started: finishes with the error at once.
class RefusedStreamReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit RefusedStreamReactor(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

void InferenceService::RecordRefusal(const char* rpc, const std::string& request_id,
                                     const grpc::Status& status) {
  AccessRecord access;
  access.api = Api::kGrpc;
  access.route = rpc;
  access.request_id = request_id;
  access.model = engine_.info().model_name;
  access.stream = absl::string_view(rpc) == "ChatStream";
  access.outcome = OutcomeLabel(status);
  RecordRequestEnd(metrics_, access);
}

grpc::ServerUnaryReactor* InferenceService::ApplyChatTemplate(
    grpc::CallbackServerContext* context, const v1::ApplyChatTemplateRequest* request,
    v1::ApplyChatTemplateResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<ChatPrompt> prompt =
      RenderChat(chat_, request->messages(), request->tools_json(),
                 request->has_add_generation_prompt() ? request->add_generation_prompt() : true);
  if (!prompt.ok()) {
    reactor->Finish(ToGrpcStatus(prompt.status(), "ApplyChatTemplate"));
    return reactor;
  }
  response->set_text(prompt->text);
  response->mutable_token_ids()->Add(prompt->token_ids.begin(), prompt->token_ids.end());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Chat(grpc::CallbackServerContext* context,
                                                 const v1::ChatRequest* request,
                                                 v1::GenerateResponse* response) {
  v1::ChatRequest chat = *request;
  absl::StatusOr<ToolCallSetup> tools = PrepareToolCalls(chat_, chat, "tools_json");
  absl::StatusOr<ChatPrompt> prompt = tools.ok()
                                          ? RenderChat(chat_, chat.messages(), tools->tools_json,
                                                       /*add_generation_prompt=*/true)
                                          : absl::StatusOr<ChatPrompt>(tools.status());
  if (!prompt.ok()) {
    const grpc::Status status = ToGrpcStatus(prompt.status(), "Chat");
    RecordRefusal("Chat", request->request_id(), status);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  // The reactor reads the request only while constructing itself.
  const v1::GenerateRequest generate = ToGenerateRequest(chat, *prompt, *chat_.formatter);
  if (log_prompts_) LogPrompt("Chat", generate);
  return new GenerateUnaryReactor(context, &generate, response, engine_, metrics_, in_flight_,
                                  "Chat", tools->plan);
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::ChatStream(
    grpc::CallbackServerContext* context, const v1::ChatRequest* request) {
  v1::ChatRequest chat = *request;
  absl::StatusOr<ToolCallSetup> tools = PrepareToolCalls(chat_, chat, "tools_json");
  absl::StatusOr<ChatPrompt> prompt = tools.ok()
                                          ? RenderChat(chat_, chat.messages(), tools->tools_json,
                                                       /*add_generation_prompt=*/true)
                                          : absl::StatusOr<ChatPrompt>(tools.status());
  if (!prompt.ok()) {
    const grpc::Status status = ToGrpcStatus(prompt.status(), "ChatStream");
    RecordRefusal("ChatStream", request->request_id(), status);
    return new RefusedStreamReactor(status);
  }
  const v1::GenerateRequest generate = ToGenerateRequest(chat, *prompt, *chat_.formatter);
  if (log_prompts_) LogPrompt("ChatStream", generate);
  return new GenerateStreamReactor(context, &generate, engine_, metrics_, in_flight_, "ChatStream",
                                   tools->plan);
}

}  // namespace kvserve
