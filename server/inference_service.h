// kvserve.v1.Inference on the gRPC callback API. Handlers only validate,
// enqueue and answer; generation runs on the engine thread.
#pragma once

#include "engine/core/engine.h"
#include "kvserve/v1/inference.grpc.pb.h"
#include "server/chat_mapping.h"
#include "server/in_flight_calls.h"
#include "server/server_metrics.h"

namespace kvserve {

class InferenceService final : public v1::Inference::CallbackService {
 public:
  /// `log_prompts`: log each generation request's prompt (never otherwise).
  InferenceService(Engine& engine, ServerMetrics& metrics, ChatAccess chat, bool log_prompts)
      : engine_(engine), metrics_(metrics), chat_(std::move(chat)), log_prompts_(log_prompts) {}

  /// The generation calls in flight (shutdown drains them).
  InFlightCalls& in_flight() { return in_flight_; }

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

  // Chat (inference_service_chat.cc).
  grpc::ServerUnaryReactor* ApplyChatTemplate(grpc::CallbackServerContext* context,
                                              const v1::ApplyChatTemplateRequest* request,
                                              v1::ApplyChatTemplateResponse* response) override;
  grpc::ServerUnaryReactor* Chat(grpc::CallbackServerContext* context,
                                 const v1::ChatRequest* request,
                                 v1::GenerateResponse* response) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* ChatStream(
      grpc::CallbackServerContext* context, const v1::ChatRequest* request) override;

 private:
  /// A chat call refused before it reached a reactor: counted and logged.
  void RecordRefusal(const char* rpc, const std::string& request_id, const grpc::Status& status);

  Engine& engine_;
  ServerMetrics& metrics_;
  ChatAccess chat_;
  InFlightCalls in_flight_;
  const bool log_prompts_;
};

/// The log line --log_prompts writes for a request (its id and its prompt).
void LogPrompt(const char* rpc, const v1::GenerateRequest& request);

}  // namespace kvserve
