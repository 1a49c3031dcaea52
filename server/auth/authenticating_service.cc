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
  std::optional<std::string_view> authorization;
  const auto [first, last] = context.client_metadata().equal_range("authorization");
  if (first != last) {
    if (std::next(first) != last) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          AuthFailureMessage(AuthResult::kMalformed));
    }
    authorization = std::string_view(first->second.data(), first->second.size());
  }
  const AuthResult result = tokens_->Check(authorization);
  if (result == AuthResult::kAccepted) return grpc::Status::OK;
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
