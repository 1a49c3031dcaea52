// kvserve.v1.Inference behind bearer-token authentication: every method
// checks the call's `authorization` metadata first and answers
// UNAUTHENTICATED, or hands the call to the wrapped service unchanged.
//
// Why a wrapping service and not gRPC's hooks: an AuthMetadataProcessor runs
// only on secure (TLS) ports, and a C++ server interceptor cannot end a call
// with a status of its own. The wrapper works on plaintext and TLS ports
// alike, and leaves grpc.health.v1 and reflection (separate services) open.
// A method it does not forward answers UNIMPLEMENTED (fail closed), and
// auth_grpc_test calls every method of the service descriptor to catch one.
#pragma once

#include <functional>
#include <memory>

#include "kvserve/v1/inference.grpc.pb.h"
#include "server/auth/bearer_tokens.h"

namespace kvserve {

class AuthenticatingService final : public v1::Inference::CallbackService {
 public:
  /// Called with the reason of each refusal (the server counts them in
  /// kvserve_auth_failures_total); must be thread-safe.
  using RefusalObserver = std::function<void(AuthResult)>;

  /// `inner` must outlive this service.
  AuthenticatingService(v1::Inference::CallbackService& inner,
                        std::shared_ptr<const BearerTokens> tokens,
                        RefusalObserver on_refused = nullptr)
      : inner_(inner), tokens_(std::move(tokens)), on_refused_(std::move(on_refused)) {}

  grpc::ServerUnaryReactor* Generate(grpc::CallbackServerContext* context,
                                     const v1::GenerateRequest* request,
                                     v1::GenerateResponse* response) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* GenerateStream(
      grpc::CallbackServerContext* context, const v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const v1::GetModelInfoRequest* request,
                                         v1::GetModelInfoResponse* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context,
                                       const v1::DetokenizeRequest* request,
                                       v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* ApplyChatTemplate(grpc::CallbackServerContext* context,
                                              const v1::ApplyChatTemplateRequest* request,
                                              v1::ApplyChatTemplateResponse* response) override;
  grpc::ServerUnaryReactor* Chat(grpc::CallbackServerContext* context,
                                 const v1::ChatRequest* request,
                                 v1::GenerateResponse* response) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* ChatStream(
      grpc::CallbackServerContext* context, const v1::ChatRequest* request) override;

 private:
  /// OK, or the UNAUTHENTICATED status the call ends with.
  grpc::Status Authenticate(const grpc::CallbackServerContext& context) const;

  v1::Inference::CallbackService& inner_;
  std::shared_ptr<const BearerTokens> tokens_;
  RefusalObserver on_refused_;
};

}  // namespace kvserve
