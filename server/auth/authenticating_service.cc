#include "server/auth/authenticating_service.h"

namespace kvserve {
namespace {

grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context, grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

class RefusedStream final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit RefusedStream(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status AuthenticatingService::Authenticate(
    const grpc::CallbackServerContext& context) const {
  AuthResult result = AuthResult::kMalformed;  // two values: which one a proxy meant is unclear
  const auto [first, last] = context.client_metadata().equal_range("authorization");
  if (first == last) {
    result = tokens_->Check(std::nullopt);
  } else if (std::next(first) == last) {
    result = tokens_->Check(std::string_view(first->second.data(), first->second.size()));
  }
  if (result == AuthResult::kAccepted) return grpc::Status::OK;
  if (on_refused_) on_refused_(result);
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, AuthFailureMessage(result));
}

grpc::ServerUnaryReactor* AuthenticatingService::Generate(grpc::CallbackServerContext* context,
                                                          const v1::GenerateRequest* request,
                                                          v1::GenerateResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.Generate(context, request, response);
}

grpc::ServerWriteReactor<v1::GenerateResponse>* AuthenticatingService::GenerateStream(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return new RefusedStream(s);
  return inner_.GenerateStream(context, request);
}

grpc::ServerUnaryReactor* AuthenticatingService::GetModelInfo(
    grpc::CallbackServerContext* context, const v1::GetModelInfoRequest* request,
    v1::GetModelInfoResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.GetModelInfo(context, request, response);
}

grpc::ServerUnaryReactor* AuthenticatingService::Tokenize(grpc::CallbackServerContext* context,
                                                          const v1::TokenizeRequest* request,
                                                          v1::TokenizeResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.Tokenize(context, request, response);
}

grpc::ServerUnaryReactor* AuthenticatingService::Detokenize(grpc::CallbackServerContext* context,
                                                            const v1::DetokenizeRequest* request,
                                                            v1::DetokenizeResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.Detokenize(context, request, response);
}

grpc::ServerUnaryReactor* AuthenticatingService::ApplyChatTemplate(
    grpc::CallbackServerContext* context, const v1::ApplyChatTemplateRequest* request,
    v1::ApplyChatTemplateResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.ApplyChatTemplate(context, request, response);
}

grpc::ServerUnaryReactor* AuthenticatingService::Chat(grpc::CallbackServerContext* context,
                                                      const v1::ChatRequest* request,
                                                      v1::GenerateResponse* response) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return RefuseUnary(context, s);
  return inner_.Chat(context, request, response);
}

grpc::ServerWriteReactor<v1::GenerateResponse>* AuthenticatingService::ChatStream(
    grpc::CallbackServerContext* context, const v1::ChatRequest* request) {
  if (grpc::Status s = Authenticate(*context); !s.ok()) return new RefusedStream(s);
  return inner_.ChatStream(context, request);
}

}  // namespace kvserve
