#include "server/inference_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "server/generate_reactors.h"
#include "server/request_mapping.h"

namespace kvserve {
namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

grpc::Status NoTokenizer() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this model has no tokenizer (no tokenizer.json in its directory)");
}

}  // namespace

void LogPrompt(const char* rpc, const v1::GenerateRequest& request) {
  KV_LOG(INFO) << rpc << " request_id=\"" << request.request_id() << "\" prompt: "
               << (request.has_token_ids()
                       ? absl::StrCat("[", absl::StrJoin(request.token_ids().ids(), ","), "]")
                       : request.text());
}

grpc::ServerUnaryReactor* InferenceService::Generate(grpc::CallbackServerContext* context,
                                                     const v1::GenerateRequest* request,
                                                     v1::GenerateResponse* response) {
  if (log_prompts_) LogPrompt("Generate", *request);
  return new GenerateUnaryReactor(context, request, response, engine_, metrics_, in_flight_,
                                  "Generate");
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::GenerateStream(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  if (log_prompts_) LogPrompt("GenerateStream", *request);
  return new GenerateStreamReactor(context, request, engine_, metrics_, in_flight_,
                                   "GenerateStream");
}

grpc::ServerUnaryReactor* InferenceService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const v1::GetModelInfoRequest*,
                                                         v1::GetModelInfoResponse* response) {
  FillModelInfo(engine_.info(), *response);
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* context,
                                                     const v1::TokenizeRequest* request,
                                                     v1::TokenizeResponse* response) {
  const Tokenizer* tokenizer = engine_.tokenizer();
  if (tokenizer == nullptr) return Done(context, NoTokenizer());
  auto ids = tokenizer->Encode(request->text(), request->has_add_special_tokens()
                                                    ? request->add_special_tokens()
                                                    : true);
  if (!ids.ok()) {
    return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      absl::StrCat("text: ", ids.status().message())));
  }
  for (int32_t id : *ids) response->add_token_ids(id);
  return Done(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* InferenceService::Detokenize(grpc::CallbackServerContext* context,
                                                       const v1::DetokenizeRequest* request,
                                                       v1::DetokenizeResponse* response) {
  const Tokenizer* tokenizer = engine_.tokenizer();
  if (tokenizer == nullptr) return Done(context, NoTokenizer());
  const int vocab = engine_.info().vocab_size;
  for (int i = 0; i < request->token_ids_size(); ++i) {
    const int32_t id = request->token_ids(i);
    if (id < 0 || id >= vocab) {
      return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        absl::StrCat("token_ids[", i, "] = ", id,
                                                     " is outside the vocabulary [0, ", vocab, ")")));
    }
  }
  const std::vector<int32_t> ids(request->token_ids().begin(), request->token_ids().end());
  response->set_text(tokenizer->Decode(
      ids, request->has_skip_special_tokens() ? request->skip_special_tokens() : true));
  return Done(context, grpc::Status::OK);
}

}  // namespace kvserve
