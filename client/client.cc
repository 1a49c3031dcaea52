#include "client/client.h"

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace kvserve {

absl::Status ToAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string FinishReasonName(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH: return "length";
    case v1::FINISH_REASON_EOS: return "eos";
    case v1::FINISH_REASON_STOP: return "stop";
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
  for (const std::string& target : options.targets) {
    grpc::ChannelArguments args;
    // One channel per target; a channel multiplexes every concurrent call.
    args.SetMaxReceiveMessageSize(64 << 20);
    if (options.use_tls && !options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
    auto channel = grpc::CreateCustomChannel(target, creds, args);
    client->stubs_.push_back(v1::Inference::NewStub(channel));
    client->channels_.push_back(std::move(channel));
  }
  return client;
}

v1::Inference::Stub& Client::NextStub() { return *stubs_[next_.fetch_add(1) % stubs_.size()]; }

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
bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
}
}  // namespace

absl::StatusOr<v1::GenerateResponse> Client::Generate(const v1::GenerateRequest& request,
                                                      const CallOptions& options) {
  return RunUnary(
      [&](grpc::ClientContext* context, v1::GenerateResponse* response) {
        return NextStub().Generate(context, request, response);
      },
      options);
}

absl::StatusOr<v1::GenerateResponse> Client::Chat(const v1::ChatRequest& request,
                                                  const CallOptions& options) {
  return RunUnary(
      [&](grpc::ClientContext* context, v1::GenerateResponse* response) {
        return NextStub().Chat(context, request, response);
      },
      options);
}

absl::StatusOr<v1::GenerateResponse> Client::RunUnary(const UnaryCall& call,
                                                      const CallOptions& options) {
  const absl::Time start = absl::Now();
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    CallOptions remaining = options;
    if (options.timeout != absl::InfiniteDuration()) remaining.timeout = options.timeout - (absl::Now() - start);
    PrepareContext(context, remaining);
    if (options.cancel) options.cancel->Attach(&context);
    v1::GenerateResponse response;
    grpc::Status status = call(&context, &response);
    if (options.cancel) options.cancel->Detach();
    if (status.ok()) return response;
    if (attempt >= options_.retry.max_attempts || !Retryable(status) ||
        (options.cancel && options.cancel->cancelled())) {
      return ToAbslStatus(status);
    }
    absl::SleepFor(Backoff(attempt));
  }
}

namespace {
void MergeChunk(const v1::GenerateResponse& chunk, v1::GenerateResponse& all) {
  if (all.request_id().empty()) all.set_request_id(chunk.request_id());
  all.mutable_token_ids()->MergeFrom(chunk.token_ids());
  all.mutable_logprobs()->MergeFrom(chunk.logprobs());
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
      [&](grpc::ClientContext* context) { return NextStub().GenerateStream(context, request); },
      on_chunk, options);
}

StreamResult Client::ChatStream(const v1::ChatRequest& request,
                                const std::function<void(const StreamChunk&)>& on_chunk,
                                const CallOptions& options) {
  return RunStream(
      [&](grpc::ClientContext* context) { return NextStub().ChatStream(context, request); },
      on_chunk, options);
}

StreamResult Client::RunStream(const StreamOpen& open,
                               const std::function<void(const StreamChunk&)>& on_chunk,
                               const CallOptions& options) {
  StreamResult result;
  result.sent = absl::Now();
  result.first_chunk = absl::InfiniteFuture();
  for (int attempt = 1;; ++attempt) {
    result.attempts = attempt;
    grpc::ClientContext context;
    CallOptions remaining = options;
    if (options.timeout != absl::InfiniteDuration()) {
      remaining.timeout = options.timeout - (absl::Now() - result.sent);
    }
    PrepareContext(context, remaining);
    if (options.cancel) options.cancel->Attach(&context);
    std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader = open(&context);
    StreamChunk chunk;
    while (reader->Read(&chunk.response)) {
      RecordChunk(chunk, result);
      if (on_chunk) on_chunk(chunk);
    }
    const bool got_any = !result.chunk_times.empty();
    result.status = reader->Finish();
    if (options.cancel) options.cancel->Detach();
    result.done = absl::Now();
    // Retry only what never produced anything: a half-streamed answer is not resent.
    if (result.status.ok() || got_any || attempt >= options_.retry.max_attempts ||
        !Retryable(result.status) || (options.cancel && options.cancel->cancelled())) {
      return result;
    }
    absl::SleepFor(Backoff(attempt));
  }
}

namespace {

// One asynchronous stream on gRPC's callback API; deletes itself when done.
class AsyncStream final : public grpc::ClientReadReactor<v1::GenerateResponse> {
 public:
  AsyncStream(std::function<void(const StreamChunk&)> on_chunk,
              std::function<void(StreamResult)> on_done, CancellationToken* cancel)
      : on_chunk_(std::move(on_chunk)), on_done_(std::move(on_done)), cancel_(cancel) {
    result_.first_chunk = absl::InfiniteFuture();
  }
  grpc::ClientContext& context() { return context_; }
  v1::GenerateRequest& request() { return request_; }

  void Start(v1::Inference::Stub& stub) {
    result_.sent = absl::Now();
    if (cancel_) cancel_->Attach(&context_);
    stub.async()->GenerateStream(&context_, &request_, this);
    StartRead(&chunk_.response);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows with the status
    RecordChunk(chunk_, result_);
    if (on_chunk_) on_chunk_(chunk_);
    StartRead(&chunk_.response);
  }
  void OnDone(const grpc::Status& status) override {
    if (cancel_) cancel_->Detach();
    result_.status = status;
    result_.done = absl::Now();
    if (on_done_) on_done_(std::move(result_));
    delete this;
  }

 private:
  grpc::ClientContext context_;
  v1::GenerateRequest request_;
  StreamChunk chunk_;
  StreamResult result_;
  std::function<void(const StreamChunk&)> on_chunk_;
  std::function<void(StreamResult)> on_done_;
  CancellationToken* cancel_;
};

}  // namespace

void Client::StartGenerateStream(const v1::GenerateRequest& request,
                                 std::function<void(const StreamChunk&)> on_chunk,
                                 std::function<void(StreamResult)> on_done,
                                 const CallOptions& options) {
  auto* stream = new AsyncStream(std::move(on_chunk), std::move(on_done), options.cancel);
  stream->request() = request;
  PrepareContext(stream->context(), options);
  stream->Start(NextStub());
}

absl::StatusOr<v1::GetModelInfoResponse> Client::GetModelInfo(const CallOptions& options) {
  grpc::ClientContext context;
  PrepareContext(context, options);
  v1::GetModelInfoResponse response;
  grpc::Status status = NextStub().GetModelInfo(&context, v1::GetModelInfoRequest(), &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<std::vector<int32_t>> Client::Tokenize(const std::string& text,
                                                      bool add_special_tokens,
                                                      const CallOptions& options) {
  grpc::ClientContext context;
  PrepareContext(context, options);
  v1::TokenizeRequest request;
  request.set_text(text);
  request.set_add_special_tokens(add_special_tokens);
  v1::TokenizeResponse response;
  grpc::Status status = NextStub().Tokenize(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return std::vector<int32_t>(response.token_ids().begin(), response.token_ids().end());
}

absl::StatusOr<std::string> Client::Detokenize(const std::vector<int32_t>& ids,
                                               const CallOptions& options) {
  grpc::ClientContext context;
  PrepareContext(context, options);
  v1::DetokenizeRequest request;
  for (int32_t id : ids) request.add_token_ids(id);
  v1::DetokenizeResponse response;
  grpc::Status status = NextStub().Detokenize(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response.text();
}

absl::StatusOr<v1::ApplyChatTemplateResponse> Client::ApplyChatTemplate(
    const v1::ApplyChatTemplateRequest& request, const CallOptions& options) {
  grpc::ClientContext context;
  PrepareContext(context, options);
  v1::ApplyChatTemplateResponse response;
  grpc::Status status = NextStub().ApplyChatTemplate(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::Status Client::WaitUntilServing(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  grpc::Status last;
  for (;;) {
    for (auto& channel : channels_) {
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
