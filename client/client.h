// kvserve C++ client library.
//
//   auto client = kvserve::Client::Connect({.targets = {"localhost:50051"}});
//   kvserve::v1::GenerateRequest req;
//   req.set_text("Hello");
//   req.mutable_stopping()->set_max_new_tokens(32);
//   auto result = (*client)->GenerateStream(req, [](const kvserve::StreamChunk& c) {
//     std::cout << c.response.text() << std::flush;
//   });
//
// Blocking calls may be made from many threads at once; StartGenerateStream
// runs a stream asynchronously on gRPC's threads. Requests are spread over the
// targets round-robin. Retries (off by default) resend a request that failed
// with UNAVAILABLE or RESOURCE_EXHAUSTED before any response arrived.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kvserve/v1/inference.grpc.pb.h"

namespace kvserve {

struct RetryPolicy {
  int max_attempts = 1;  // 1 = no retries
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  double backoff_multiplier = 2.0;
};

struct ClientOptions {
  std::vector<std::string> targets;  // HOST:PORT, one or more
  bool use_tls = false;
  std::string tls_root_certs_file;   // PEM; empty = the system roots
  /// Name the server certificate must carry, when it differs from the target
  /// host (e.g. dialing 10.0.0.7:50051 for a certificate issued to kvserve.internal).
  std::string tls_server_name;
  /// PEM client certificate chain and key, for servers that verify clients
  /// (kvserve --tls_client_ca): both or neither; needs use_tls.
  std::string tls_client_cert_file;
  std::string tls_client_key_file;
  /// Sent as "authorization: Bearer <auth_token>" on every kvserve.v1 call
  /// (kvserve --auth_token_file); empty: none. Over plaintext it can be sniffed.
  std::string auth_token;
  RetryPolicy retry;
};

/// Cancels an in-flight call from any thread.
class CancellationToken {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 /// For the client library: binds the token to the call in progress.
  void Attach(grpc::ClientContext* context);
  void Detach();

 private:
  std::mutex mu_;
  grpc::ClientContext* context_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

struct CallOptions {
  absl::Duration timeout = absl::InfiniteDuration();  // the call's deadline, from its start
  CancellationToken* cancel = nullptr;
};

/// One streamed message and when it arrived.
struct StreamChunk {
  v1::GenerateResponse response;
  absl::Time received;
};

/// A finished stream: all messages merged, with timings.
struct StreamResult {
  v1::GenerateResponse response;  // token_ids and text concatenated; last finish_reason/usage
  absl::Time sent;
  absl::Time first_chunk;  // InfiniteFuture when no message arrived
  absl::Time done;
  std::vector<absl::Time> chunk_times;
  std::vector<int> chunk_tokens;  // tokens in each message
  grpc::Status status;
  int attempts = 1;
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& request,
                                                const CallOptions& options = {});
  /// Streams on the calling thread, calling `on_chunk` as each message
  /// arrives. The result's status says how the stream ended.
  StreamResult GenerateStream(const v1::GenerateRequest& request,
                              const std::function<void(const StreamChunk&)>& on_chunk = {},
                              const CallOptions& options = {});
  /// Starts a stream on gRPC's threads: `on_chunk` for each message, then
  /// `on_done` once. Returns at once; cancel through options.cancel.
  void StartGenerateStream(const v1::GenerateRequest& request,
                           std::function<void(const StreamChunk&)> on_chunk,
                           std::function<void(StreamResult)> on_done,
                           const CallOptions& options = {});

  /// Chat: the server renders the conversation with the model's template.
  absl::StatusOr<v1::GenerateResponse> Chat(const v1::ChatRequest& request,
                                            const CallOptions& options = {});
  StreamResult ChatStream(const v1::ChatRequest& request,
                          const std::function<void(const StreamChunk&)>& on_chunk = {},
                          const CallOptions& options = {});
  absl::StatusOr<v1::ApplyChatTemplateResponse> ApplyChatTemplate(
      const v1::ApplyChatTemplateRequest& request, const CallOptions& options = {});

  absl::StatusOr<v1::GetModelInfoResponse> GetModelInfo(const CallOptions& options = {});
  absl::StatusOr<std::vector<int32_t>> Tokenize(const std::string& text, bool add_special_tokens,
                                                const CallOptions& options = {});
  absl::StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids,
                                         const CallOptions& options = {});

  /// Waits until a target answers the health check as SERVING.
  absl::Status WaitUntilServing(absl::Duration timeout);

 private:
  explicit Client(const ClientOptions& options) : options_(options) {}
  // One call on a stub picked per attempt; RunUnary/RunStream add the
  // deadline, cancellation, retries and (for streams) the timings.
  using UnaryCall = std::function<grpc::Status(grpc::ClientContext*, v1::GenerateResponse*)>;
  using StreamOpen = std::function<std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>>(
      grpc::ClientContext*)>;
  absl::StatusOr<v1::GenerateResponse> RunUnary(const UnaryCall& call, const CallOptions& options);
  StreamResult RunStream(const StreamOpen& open,
                         const std::function<void(const StreamChunk&)>& on_chunk,
                         const CallOptions& options);
  v1::Inference::Stub& NextStub();
  void PrepareContext(grpc::ClientContext& context, const CallOptions& options) const;
  absl::Duration Backoff(int attempt) const;

  ClientOptions options_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Inference::Stub>> stubs_;
  std::atomic<uint64_t> next_{0};
};

/// grpc::Status → absl::Status (same code and message).
absl::Status ToAbslStatus(const grpc::Status& status);

/// "length", "eos", "stop" or "unspecified".
std::string FinishReasonName(v1::FinishReason reason);

}  // namespace kvserve
