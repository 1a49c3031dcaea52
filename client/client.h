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
// runs a stream asynchronously on gRPC's threads. Targets are HOST:PORT,
// comma-separated lists of them, or dns:///NAME:PORT (one replica per
// address); each call goes to the replica with the fewest calls in flight
// (client/replica_set.h, docs/routing.md). A call that failed with
// UNAVAILABLE before any response arrived fails over to a replica it has not
// tried yet, at once; one that already streamed tokens is never resent.
// Retries with back-off (off by default) resend a request that failed with
// UNAVAILABLE or RESOURCE_EXHAUSTED before any response arrived, once every
// replica has been tried.
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
#include "client/replica_set.h"
#include "kvserve/v1/inference.grpc.pb.h"

namespace kvserve {

struct RetryPolicy {
  int max_attempts = 1;  // 1 = no retries
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  double backoff_multiplier = 2.0;
};

struct ClientOptions {
  /// HOST:PORT, "HOST:PORT,HOST:PORT", or dns:///NAME:PORT; one or more.
  std::vector<std::string> targets;
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
  RoutingOptions routing;
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
  int attempts = 1;       // failovers and retries included
  int failovers = 0;      // attempts moved to another replica after UNAVAILABLE
  std::string replica;    // the address that gave the final answer (or error)
};

struct AsyncLink;  // client.cc

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  /// Waits for the asynchronous streams still in flight to end (cancel them
  /// first to be quick); not from inside one of their callbacks.
  ~Client();

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
  /// Special tokens (BOS, EOS, ...) are left out of the text.
  absl::StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids,
                                         const CallOptions& options = {});
  /// With `skip_special_tokens` false, special tokens are written as text too.
  absl::StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens,
                                         const CallOptions& options);

  /// Waits until a replica answers the health check as SERVING.
  absl::Status WaitUntilServing(absl::Duration timeout);

  /// Each replica's counters (attempts, outcomes, in flight, down).
  std::vector<ReplicaStats> replica_stats() const { return replicas_->Stats(); }

 private:
  explicit Client(const ClientOptions& options) : options_(options) {}
  // One call on the stub of the replica picked for the attempt; RunUnary /
  // RunStream add the deadline, cancellation, failover, retries and (for
  // streams) the timings.
  template <typename Response>
  using UnaryCall = std::function<grpc::Status(v1::Inference::Stub&, grpc::ClientContext*, Response*)>;
  using StreamOpen = std::function<std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>>(
      v1::Inference::Stub&, grpc::ClientContext*)>;
  template <typename Response>
  absl::StatusOr<Response> RunUnary(const UnaryCall<Response>& call, const CallOptions& options);
  StreamResult RunStream(const StreamOpen& open,
                         const std::function<void(const StreamChunk&)>& on_chunk,
                         const CallOptions& options);
  enum class AfterFailure { kGiveUp, kFailOver, kRetry };
  /// The retry rule (docs/routing.md): `tried` holds the failed attempt's replica.
  AfterFailure Decide(const grpc::Status& status, bool got_response, int policy_attempt,
                      const std::vector<const Replica*>& tried, const CallOptions& options) const;
  void PrepareContext(grpc::ClientContext& context, const CallOptions& options) const;
  absl::Duration Backoff(int attempt) const;

  ClientOptions options_;
  std::unique_ptr<ReplicaSet> replicas_;
  // Counts the asynchronous streams in flight; the destructor waits for
  // them, since gRPC callback calls need their channel until they end.
  std::shared_ptr<AsyncLink> async_link_;
};

/// grpc::Status → absl::Status (same code and message).
absl::Status ToAbslStatus(const grpc::Status& status);

/// "length", "eos", "stop" or "unspecified".
std::string FinishReasonName(v1::FinishReason reason);

}  // namespace kvserve
