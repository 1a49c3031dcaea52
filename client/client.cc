#include "client/client.h"

#include <condition_variable>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace kvserve {

/// What asynchronous streams share with their Client (see client.h).
struct AsyncLink {
  // Recursive: a stream's end may start the next attempt, whose end gRPC
  // may run inline on the same thread.
  std::recursive_mutex mu;
  std::condition_variable_any ended;
  int in_flight = 0;  // asynchronous streams not yet ended
};

absl::Status ToAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string FinishReasonName(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH: return "length";
    case v1::FINISH_REASON_EOS: return "eos";
    case v1::FINISH_REASON_STOP: return "stop";
    case v1::FINISH_REASON_TOOL_CALLS: return "tool_calls";
    default: return "unspecified";
  }
}

void CancellationToken::Cancel() {
  cancelled_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  if (context_ != nullptr) context_->TryCancel();
}

void CancellationToken::Attach(grpc::ClientContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  context_ = context;
  if (cancelled_.load()) context->TryCancel();
}

void CancellationToken::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  context_ = nullptr;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.targets.empty()) return absl::InvalidArgumentError("no target given");
  if (options.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("retry.max_attempts must be >= 1");
  }
  if (options.auth_token.find_first_of("\r\n") != std::string::npos) {
    return absl::InvalidArgumentError("auth_token: must be one line");
  }
  if (options.tls_client_cert_file.empty() != options.tls_client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls_client_cert_file and tls_client_key_file must be given together");
  }
  if (!options.tls_client_cert_file.empty() && !options.use_tls) {
    return absl::InvalidArgumentError("a TLS client certificate needs use_tls");
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.use_tls) {
    grpc::SslCredentialsOptions ssl;
    auto read = [](const std::string& path, std::string& out) -> absl::Status {
      if (path.empty()) return absl::OkStatus();
      std::ifstream in(path);
      if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
      std::ostringstream pem;
      pem << in.rdbuf();
      out = pem.str();
      return absl::OkStatus();
    };
    if (absl::Status s = read(options.tls_root_certs_file, ssl.pem_root_certs); !s.ok()) return s;
    if (absl::Status s = read(options.tls_client_cert_file, ssl.pem_cert_chain); !s.ok()) return s;
    if (absl::Status s = read(options.tls_client_key_file, ssl.pem_private_key); !s.ok()) return s;
    creds = grpc::SslCredentials(ssl);
  }
  std::unique_ptr<Client> client(new Client(options));
  // One channel per replica; a channel multiplexes every concurrent call.
  auto make_channel = [options, creds](const std::string& address, const std::string& host) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    // An address resolved from dns:///NAME is checked against NAME's certificate.
    const std::string name = !options.tls_server_name.empty() ? options.tls_server_name : host;
    if (options.use_tls && !name.empty()) args.SetSslTargetNameOverride(name);
    return grpc::CreateCustomChannel(address, creds, args);
  };
  auto replicas = ReplicaSet::Create(options.targets, make_channel, options.routing);
  if (!replicas.ok()) return replicas.status();
  client->replicas_ = *std::move(replicas);
  client->async_link_ = std::make_shared<AsyncLink>();
  return client;
}

Client::~Client() {
  // gRPC's callback calls need their channel until they end (the channel
  // owns their completion queue): wait for the asynchronous streams.
  if (!async_link_) return;
  std::unique_lock<std::recursive_mutex> lock(async_link_->mu);
  async_link_->ended.wait(lock, [&] { return async_link_->in_flight == 0; });
}

void Client::PrepareContext(grpc::ClientContext& context, const CallOptions& options) const {
  // Per-call metadata, not call credentials: gRPC sends call credentials
  // only over TLS, and a token on a plaintext port (a sidecar's loopback) is
  // the operator's choice.
  if (!options_.auth_token.empty()) {
    context.AddMetadata("authorization", "Bearer " + options_.auth_token);
  }
  if (options.timeout != absl::InfiniteDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + options.timeout));
  }
}

absl::Duration Client::Backoff(int attempt) const {
  absl::Duration d = options_.retry.initial_backoff;
  for (int i = 1; i < attempt; ++i) d = d * options_.retry.backoff_multiplier;
  return std::min(d, options_.retry.max_backoff);
}

namespace {
// Ends of an attempt that another replica may take over when no message
// came back and the caller did not cancel: UNAVAILABLE (down, draining), and
// CANCELLED, which the caller did not ask for here, so it came from the
// server: a replica shutting down cancels calls that arrived as it stopped,
// before any handler saw them.
bool FailsOver(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::CANCELLED;
}

bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// The rest of a call's deadline for its next attempt.
CallOptions Remaining(const CallOptions& options, absl::Time start) {
  CallOptions remaining = options;
  if (options.timeout != absl::InfiniteDuration()) remaining.timeout = options.timeout - (absl::Now() - start);
  return remaining;
}
}  // namespace

Client::AfterFailure Client::Decide(const grpc::Status& status, bool got_response,
                                    int policy_attempt, const std::vector<const Replica*>& tried,
                                    const CallOptions& options) const {
  // A response (a token) already reached the caller: resending would serve
  // the request twice, so whatever ended the call is the answer.
  if (got_response || (options.cancel && options.cancel->cancelled())) return AfterFailure::kGiveUp;
  if (FailsOver(status.error_code()) && replicas_->HasUntried(tried)) {
    return AfterFailure::kFailOver;
  }
  if (policy_attempt < options_.retry.max_attempts && Retryable(status)) return AfterFailure::kRetry;
  return AfterFailure::kGiveUp;
}

template <typename Response>
absl::StatusOr<Response> Client::RunUnary(const UnaryCall<Response>& call,
                                          const CallOptions& options) {
  const absl::Time start = absl::Now();
  std::vector<const Replica*> tried;
  for (int policy_attempt = 1;;) {
    grpc::ClientContext context;
    PrepareContext(context, Remaining(options, start));
    if (options.cancel) options.cancel->Attach(&context);
    Replica* replica = replicas_->Acquire(tried);
    Response response;
    grpc::Status status = call(replica->stub(), &context, &response);
    replicas_->Release(replica, status.error_code());
    if (options.cancel) options.cancel->Detach();
    if (status.ok()) return response;
    tried.push_back(replica);
    switch (Decide(status, false, policy_attempt, tried, options)) {
      case AfterFailure::kFailOver:
        break;
      case AfterFailure::kRetry:
        absl::SleepFor(Backoff(policy_attempt++));
        tried.clear();
        break;
      case AfterFailure::kGiveUp:
        return ToAbslStatus(status);
    }
  }
}

absl::StatusOr<v1::GenerateResponse> Client::Generate(const v1::GenerateRequest& request,
                                                      const CallOptions& options) {
  return RunUnary<v1::GenerateResponse>(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context, v1::GenerateResponse* response) {
        return stub.Generate(context, request, response);
      },
      options);
}

absl::StatusOr<v1::GenerateResponse> Client::Chat(const v1::ChatRequest& request,
                                                  const CallOptions& options) {
  return RunUnary<v1::GenerateResponse>(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context, v1::GenerateResponse* response) {
        return stub.Chat(context, request, response);
      },
      options);
}

namespace {
void MergeChunk(const v1::GenerateResponse& chunk, v1::GenerateResponse& all) {
  if (all.request_id().empty()) all.set_request_id(chunk.request_id());
  all.mutable_token_ids()->MergeFrom(chunk.token_ids());
  all.mutable_logprobs()->MergeFrom(chunk.logprobs());
  all.mutable_tool_calls()->MergeFrom(chunk.tool_calls());
  all.mutable_text()->append(chunk.text());
  if (chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
    all.set_finish_reason(chunk.finish_reason());
    *all.mutable_usage() = chunk.usage();
  }
}

// Stamps a chunk just read and adds it to the result (blocking and callback
// streams keep the same record).
void RecordChunk(StreamChunk& chunk, StreamResult& result) {
  chunk.received = absl::Now();
  if (result.chunk_times.empty()) result.first_chunk = chunk.received;
  result.chunk_times.push_back(chunk.received);
  result.chunk_tokens.push_back(chunk.response.token_ids_size());
  MergeChunk(chunk.response, result.response);
}
}  // namespace

StreamResult Client::GenerateStream(const v1::GenerateRequest& request,
                                    const std::function<void(const StreamChunk&)>& on_chunk,
                                    const CallOptions& options) {
  return RunStream(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context) {
        return stub.GenerateStream(context, request);
      },
      on_chunk, options);
}

StreamResult Client::ChatStream(const v1::ChatRequest& request,
                                const std::function<void(const StreamChunk&)>& on_chunk,
                                const CallOptions& options) {
  return RunStream(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context) {
        return stub.ChatStream(context, request);
      },
      on_chunk, options);
}

StreamResult Client::RunStream(const StreamOpen& open,
                               const std::function<void(const StreamChunk&)>& on_chunk,
                               const CallOptions& options) {
  StreamResult result;
  result.sent = absl::Now();
  result.first_chunk = absl::InfiniteFuture();
  std::vector<const Replica*> tried;
  for (int policy_attempt = 1;; ++result.attempts) {
    grpc::ClientContext context;
    PrepareContext(context, Remaining(options, result.sent));
    if (options.cancel) options.cancel->Attach(&context);
    Replica* replica = replicas_->Acquire(tried);
    result.replica = replica->address();
    std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader = open(replica->stub(), &context);
    StreamChunk chunk;
    while (reader->Read(&chunk.response)) {
      RecordChunk(chunk, result);
      if (on_chunk) on_chunk(chunk);
    }
    result.status = reader->Finish();
    replicas_->Release(replica, result.status.error_code());
    if (options.cancel) options.cancel->Detach();
    result.done = absl::Now();
    if (result.status.ok()) return result;
    tried.push_back(replica);
    switch (Decide(result.status, !result.chunk_times.empty(), policy_attempt, tried, options)) {
      case AfterFailure::kFailOver:
        ++result.failovers;
        break;
      case AfterFailure::kRetry:
        absl::SleepFor(Backoff(policy_attempt++));
        tried.clear();
        break;
      case AfterFailure::kGiveUp:
        return result;
    }
  }
}

namespace {

// What an asynchronous stream carries from one attempt to the next.
struct AsyncStreamState {
  std::shared_ptr<AsyncLink> link;
  ReplicaSet* replicas = nullptr;  // the Client's: it waits for its streams
  std::string auth_token;          // sent with every attempt, as PrepareContext does
  v1::GenerateRequest request;
  std::function<void(const StreamChunk&)> on_chunk;
  std::function<void(StreamResult)> on_done;
  CallOptions options;
  StreamResult result;
  std::vector<const Replica*> tried;
};

// One attempt of an asynchronous stream on gRPC's callback API; deletes
// itself when done. An attempt that ends UNAVAILABLE before any message
// starts the next one on an untried replica (failover only: back-off
// retries would sleep on gRPC's threads).
class AsyncStream final : public grpc::ClientReadReactor<v1::GenerateResponse> {
 public:
  /// Starts an attempt (the Client waits for it to end).
  static void Launch(AsyncStreamState state, ReplicaSet& replicas) {
    (new AsyncStream(std::move(state)))->Start(replicas);
  }

 private:
  explicit AsyncStream(AsyncStreamState state) : state_(std::move(state)) {}

  void Start(ReplicaSet& replicas) {
    const CallOptions& options = state_.options;
    if (!state_.auth_token.empty()) context_.AddMetadata("authorization", "Bearer " + state_.auth_token);
    if (options.timeout != absl::InfiniteDuration()) {
      context_.set_deadline(absl::ToChronoTime(state_.result.sent + options.timeout));
    }
    if (options.cancel) options.cancel->Attach(&context_);
    replica_ = replicas.Acquire(state_.tried);
    state_.result.replica = replica_->address();
    state_.result.attempts = static_cast<int>(state_.tried.size()) + 1;
    replica_->stub().async()->GenerateStream(&context_, &state_.request, this);
    StartRead(&chunk_.response);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows with the status
    RecordChunk(chunk_, state_.result);
    if (state_.on_chunk) state_.on_chunk(chunk_);
    StartRead(&chunk_.response);
  }
  void OnDone(const grpc::Status& status) override {
    CancellationToken* cancel = state_.options.cancel;
    if (cancel) cancel->Detach();
    StreamResult& result = state_.result;
    result.status = status;
    result.done = absl::Now();
    state_.tried.push_back(replica_);
    // The Client waits for this stream, so its replicas are still there.
    std::shared_ptr<AsyncLink> link = state_.link;
    {
      std::lock_guard<std::recursive_mutex> lock(link->mu);
      ReplicaSet& replicas = *state_.replicas;
      replicas.Release(replica_, status.error_code());
      if (FailsOver(status.error_code()) && result.chunk_times.empty() &&
          !(cancel && cancel->cancelled()) && replicas.HasUntried(state_.tried)) {
        ++result.failovers;
        Launch(std::move(state_), replicas);  // the next attempt carries the count on
        delete this;
        return;
      }
    }
    if (state_.on_done) state_.on_done(std::move(result));
    delete this;
    // Last: a Client being destroyed returns only after on_done has run.
    std::lock_guard<std::recursive_mutex> lock(link->mu);
    --link->in_flight;
    link->ended.notify_all();
  }

  AsyncStreamState state_;
  grpc::ClientContext context_;
  Replica* replica_ = nullptr;
  StreamChunk chunk_;
};

}  // namespace

void Client::StartGenerateStream(const v1::GenerateRequest& request,
                                 std::function<void(const StreamChunk&)> on_chunk,
                                 std::function<void(StreamResult)> on_done,
                                 const CallOptions& options) {
  AsyncStreamState state;
  state.link = async_link_;
  state.replicas = replicas_.get();
  state.auth_token = options_.auth_token;
  {
    std::lock_guard<std::recursive_mutex> lock(async_link_->mu);
    ++async_link_->in_flight;
  }
  state.request = request;
  state.on_chunk = std::move(on_chunk);
  state.on_done = std::move(on_done);
  state.options = options;
  state.result.sent = absl::Now();
  state.result.first_chunk = absl::InfiniteFuture();
  AsyncStream::Launch(std::move(state), *replicas_);  // the Client is alive: no lock needed
}

absl::StatusOr<v1::GetModelInfoResponse> Client::GetModelInfo(const CallOptions& options) {
  return RunUnary<v1::GetModelInfoResponse>(
      [](v1::Inference::Stub& stub, grpc::ClientContext* context, v1::GetModelInfoResponse* r) {
        return stub.GetModelInfo(context, v1::GetModelInfoRequest(), r);
      },
      options);
}

absl::StatusOr<std::vector<int32_t>> Client::Tokenize(const std::string& text,
                                                      bool add_special_tokens,
                                                      const CallOptions& options) {
  v1::TokenizeRequest request;
  request.set_text(text);
  request.set_add_special_tokens(add_special_tokens);
  auto response = RunUnary<v1::TokenizeResponse>(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context, v1::TokenizeResponse* r) {
        return stub.Tokenize(context, request, r);
      },
      options);
  if (!response.ok()) return response.status();
  return std::vector<int32_t>(response->token_ids().begin(), response->token_ids().end());
}

absl::StatusOr<std::string> Client::Detokenize(const std::vector<int32_t>& ids,
                                               const CallOptions& options) {
  return Detokenize(ids, /*skip_special_tokens=*/true, options);
}

absl::StatusOr<std::string> Client::Detokenize(const std::vector<int32_t>& ids,
                                               bool skip_special_tokens,
                                               const CallOptions& options) {
  v1::DetokenizeRequest request;
  for (int32_t id : ids) request.add_token_ids(id);
  request.set_skip_special_tokens(skip_special_tokens);
  auto response = RunUnary<v1::DetokenizeResponse>(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context, v1::DetokenizeResponse* r) {
        return stub.Detokenize(context, request, r);
      },
      options);
  if (!response.ok()) return response.status();
  return response->text();
}

absl::StatusOr<v1::ApplyChatTemplateResponse> Client::ApplyChatTemplate(
    const v1::ApplyChatTemplateRequest& request, const CallOptions& options) {
  return RunUnary<v1::ApplyChatTemplateResponse>(
      [&](v1::Inference::Stub& stub, grpc::ClientContext* context,
          v1::ApplyChatTemplateResponse* r) { return stub.ApplyChatTemplate(context, request, r); },
      options);
}

absl::Status Client::WaitUntilServing(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  grpc::Status last;
  for (;;) {
    for (const auto& channel : replicas_->Channels()) {
      auto health = grpc::health::v1::Health::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(1))));
      grpc::health::v1::HealthCheckRequest request;
      grpc::health::v1::HealthCheckResponse response;
      last = health->Check(&context, request, &response);
      if (last.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
        return absl::OkStatus();
      }
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no target became SERVING: ", last.error_message()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace kvserve
