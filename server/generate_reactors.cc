#include "server/generate_reactors.h"

#include <chrono>
#include <utility>

#include "server/request_mapping.h"
#include "server/status_map.h"

namespace kvserve {
namespace {

// The engine's handle on a reactor: keeps it alive until the engine lets go.
template <typename Reactor>
class ReactorSink final : public RequestSink {
 public:
  explicit ReactorSink(Reactor* reactor) : reactor_(reactor) { reactor_->Ref(); }
  ~ReactorSink() override { reactor_->Unref(); }
  void OnOutput(RequestOutput output) override { reactor_->Deliver(std::move(output)); }
  void OnAbort(absl::Status status) override { reactor_->DeliverAbort(std::move(status)); }
  bool IsCancelled() const override { return reactor_->cancelled(); }
  bool IsPaused() const override { return reactor_->paused(); }

 private:
  Reactor* reactor_;
};

absl::Time DeadlineOf(const grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// Appends one engine output to a response message.
void Merge(const RequestOutput& out, v1::GenerateResponse& msg) {
  for (int32_t id : out.token_ids) msg.add_token_ids(id);
  msg.mutable_text()->append(out.text);
  for (const TokenLogprobs& l : out.logprobs) {
    v1::TokenLogprobs* m = msg.add_logprobs();
    m->set_token_id(l.token.token_id);
    m->set_logprob(l.token.logprob);
    for (const TokenLogprob& t : l.top) {
      v1::TokenLogprob* alt = m->add_top();
      alt->set_token_id(t.token_id);
      alt->set_logprob(t.logprob);
    }
  }
  if (out.finished()) {
    msg.set_finish_reason(ToProto(out.finish_reason));
    msg.mutable_usage()->set_prompt_tokens(out.prompt_tokens);
    msg.mutable_usage()->set_completion_tokens(out.completion_tokens);
  }
}

}  // namespace

ToolCallOutputs::ToolCallOutputs(tool_calls::ToolCallPlan plan) {
  if (plan.mode != tool_calls::ToolCallMode::kOff) streamer_.emplace(std::move(plan));
}

void ToolCallOutputs::Merge(RequestOutput& output, v1::GenerateResponse& msg) {
  if (!streamer_) {
    ::kvserve::Merge(output, msg);
    return;
  }
  std::string content = streamer_->Add(output.text).content;
  if (output.finished()) content += streamer_->Finish().content;
  output.text = std::move(content);
  ::kvserve::Merge(output, msg);
  const auto& calls = streamer_->calls();
  for (; sent_ < streamer_->complete_calls(); ++sent_) {
    v1::ToolCall* call = msg.add_tool_calls();
    call->set_id(calls[sent_].id);
    call->set_name(calls[sent_].name);
    call->set_arguments(calls[sent_].arguments);
  }
  // A reply cut by max_new_tokens stays "length": its last call may be cut too.
  if (output.finished() && !calls.empty() && output.finish_reason != FinishReason::kLength) {
    msg.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
  }
}

namespace {

// Submits the request; on failure returns the gRPC status to finish with.
// Fills the access record's request id and prompt size as they become known.
template <typename Reactor>
std::optional<grpc::Status> Submit(Reactor* reactor, grpc::CallbackServerContext* context,
                                   const v1::GenerateRequest& proto, Engine& engine, bool counted,
                                   AccessRecord& access) {
  access.request_id = proto.request_id();
  if (!counted) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  absl::StatusOr<Request> request = ToEngineRequest(proto, engine, DeadlineOf(context));
  if (!request.ok()) return ToGrpcStatus(request.status());
  access.request_id = request->request_id;
  access.prompt_tokens = static_cast<int64_t>(request->prompt.size());
  absl::Status submitted =
      engine.Submit(*std::move(request), std::make_shared<ReactorSink<Reactor>>(reactor));
  if (!submitted.ok()) return ToGrpcStatus(submitted, "Submit");
  return std::nullopt;
}

AccessRecord NewAccessRecord(const char* rpc, const Engine& engine, bool stream) {
  AccessRecord access;
  access.api = Api::kGrpc;
  access.route = rpc;
  access.model = engine.info().model_name;
  access.stream = stream;
  return access;
}

// Counts the output's tokens, and the first one's time.
void NoteOutput(const RequestOutput& output, absl::Time start, AccessRecord& access) {
  if (output.token_ids.empty()) return;
  if (!access.time_to_first_token) access.time_to_first_token = absl::Now() - start;
  access.output_tokens += static_cast<int64_t>(output.token_ids.size());
}

}  // namespace

GenerateStreamReactor::GenerateStreamReactor(grpc::CallbackServerContext* context,
                                             const v1::GenerateRequest* request, Engine& engine,
                                             ServerMetrics& metrics, InFlightCalls& calls,
                                             const char* rpc, tool_calls::ToolCallPlan tools)
    : engine_(engine),
      metrics_(metrics),
      calls_(calls),
      counted_(calls.TryEnter()),
      unsent_(engine.max_unsent_tokens()),
      access_(NewAccessRecord(rpc, engine, /*stream=*/true)),
      start_(absl::Now()),
      tools_(std::move(tools)) {
  std::optional<grpc::Status> error;
  {
    // Under mu_: once submitted, the engine may Deliver before Submit returns.
    std::lock_guard<std::mutex> lock(mu_);
    error = Submit(this, context, *request, engine, counted_, access_);
    request_id_ = access_.request_id;
    if (error) {
      final_status_ = *error;
      access_.outcome = OutcomeLabel(*error);
    }
  }
  if (error) Pump();
}

void GenerateStreamReactor::Deliver(RequestOutput output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!has_pending_) {
      pending_.Clear();
      // The id rides the first message only: repeating a client's id in
      // every message would multiply its size by the stream's length.
      if (!sent_request_id_) pending_.set_request_id(request_id_);
      sent_request_id_ = true;
      has_pending_ = true;
    }
    tools_.Merge(output, pending_);
    NoteOutput(output, start_, access_);
    if (!write_failed_) {
      const int n = static_cast<int>(output.token_ids.size());
      pending_tokens_ += n;
      unsent_.Produced(n);
    }
    if (output.finished()) {
      final_status_ = grpc::Status::OK;
      access_.outcome = FinishReasonLabel(output.finish_reason);
    }
  }
  Pump();
}

void GenerateStreamReactor::DeliverAbort(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_status_ = ToGrpcStatus(status, "GenerateStream");
    access_.outcome = OutcomeLabel(*final_status_);
    has_pending_ = false;  // tokens not yet sent go nowhere: the stream ends in error
  }
  Pump();
}

void GenerateStreamReactor::Pump() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!finish_called_ && !writing_ && !starting_write_) {
    if (has_pending_ && !write_failed_) {
      in_flight_.Swap(&pending_);
      in_flight_tokens_ = std::exchange(pending_tokens_, 0);
      has_pending_ = false;
      writing_ = true;
      starting_write_ = true;
      lock.unlock();
      StartWrite(&in_flight_);
      lock.lock();
      starting_write_ = false;
      continue;  // an OnWriteDone that came meanwhile left the next step to us
    }
    if (final_status_) {
      finish_called_ = true;
      const grpc::Status status = *final_status_;
      AccessRecord access = access_;
      lock.unlock();
      access.duration = absl::Now() - start_;
      RecordRequestEnd(metrics_, access);
      Finish(status);
    }
    return;
  }
}

void GenerateStreamReactor::OnWriteDone(bool ok) {
  bool resumed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    resumed = unsent_.Written(std::exchange(in_flight_tokens_, 0));
    if (!ok) {
      write_failed_ = true;
      has_pending_ = false;
      pending_tokens_ = 0;
      resumed = unsent_.Discard() || resumed;
    }
  }
  if (resumed) engine_.Wake();  // it may be idle with only this request paused
  Pump();
}

void GenerateStreamReactor::OnCancel() {
  cancelled_.store(true);
  engine_.Wake();
}

void GenerateStreamReactor::OnDone() {
  if (counted_) calls_.Exit();
  Unref();
}

GenerateUnaryReactor::GenerateUnaryReactor(grpc::CallbackServerContext* context,
                                           const v1::GenerateRequest* request,
                                           v1::GenerateResponse* response, Engine& engine,
                                           ServerMetrics& metrics, InFlightCalls& calls,
                                           const char* rpc, tool_calls::ToolCallPlan tools)
    : engine_(engine),
      metrics_(metrics),
      calls_(calls),
      counted_(calls.TryEnter()),
      response_(response),
      access_(NewAccessRecord(rpc, engine, /*stream=*/false)),
      start_(absl::Now()),
      tools_(std::move(tools)) {
  std::optional<grpc::Status> error;
  {
    // Under mu_: once submitted, the engine may Deliver (and merge into
    // response_) before the request id is written.
    std::lock_guard<std::mutex> lock(mu_);
    error = Submit(this, context, *request, engine, counted_, access_);
    response_->set_request_id(access_.request_id);
  }
  if (error) FinishOnce(*error, OutcomeLabel(*error));
}

void GenerateUnaryReactor::Deliver(RequestOutput output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_called_) return;
    tools_.Merge(output, *response_);
    NoteOutput(output, start_, access_);
  }
  if (output.finished()) FinishOnce(grpc::Status::OK, FinishReasonLabel(output.finish_reason));
}

void GenerateUnaryReactor::DeliverAbort(absl::Status status) {
  const grpc::Status grpc_status = ToGrpcStatus(status, "Generate");
  FinishOnce(grpc_status, OutcomeLabel(grpc_status));
}

void GenerateUnaryReactor::FinishOnce(grpc::Status status, const std::string& outcome) {
  AccessRecord access;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_called_) return;
    finish_called_ = true;
    access = access_;
  }
  access.outcome = outcome;
  access.duration = absl::Now() - start_;
  RecordRequestEnd(metrics_, access);
  Finish(std::move(status));
}

void GenerateUnaryReactor::OnCancel() {
  cancelled_.store(true);
  engine_.Wake();
}

void GenerateUnaryReactor::OnDone() {
  if (counted_) calls_.Exit();
  Unref();
}

}  // namespace kvserve
