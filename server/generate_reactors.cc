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

// Submits the request; on failure returns the gRPC status to finish with.
template <typename Reactor>
std::optional<grpc::Status> Submit(Reactor* reactor, grpc::CallbackServerContext* context,
                                   const v1::GenerateRequest& proto, Engine& engine,
                                   bool counted, std::string* request_id) {
  if (!counted) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  absl::StatusOr<Request> request = ToEngineRequest(proto, engine, DeadlineOf(context));
  if (!request.ok()) return ToGrpcStatus(request.status());
  *request_id = request->request_id;
  absl::Status submitted =
      engine.Submit(*std::move(request), std::make_shared<ReactorSink<Reactor>>(reactor));
  if (!submitted.ok()) return ToGrpcStatus(submitted, "Submit");
  return std::nullopt;
}

}  // namespace

GenerateStreamReactor::GenerateStreamReactor(grpc::CallbackServerContext* context,
                                             const v1::GenerateRequest* request, Engine& engine,
                                             ServerMetrics& metrics, InFlightCalls& calls)
    : engine_(engine),
      metrics_(metrics),
      calls_(calls),
      counted_(calls.TryEnter()),
      unsent_(engine.max_unsent_tokens()) {
  std::optional<grpc::Status> error =
      Submit(this, context, *request, engine, counted_, &request_id_);
  if (error) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      final_status_ = *error;
      outcome_ = OutcomeLabel(*error);
    }
    Pump();
  }
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
    Merge(output, pending_);
    if (!write_failed_) {
      const int n = static_cast<int>(output.token_ids.size());
      pending_tokens_ += n;
      unsent_.Produced(n);
    }
    if (output.finished()) {
      final_status_ = grpc::Status::OK;
      outcome_ = FinishReasonLabel(output.finish_reason);
    }
  }
  Pump();
}

void GenerateStreamReactor::DeliverAbort(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_status_ = ToGrpcStatus(status, "GenerateStream");
    outcome_ = OutcomeLabel(*final_status_);
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
      const std::string outcome = outcome_;
      lock.unlock();
      metrics_.RecordOutcome(outcome);
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
                                           ServerMetrics& metrics, InFlightCalls& calls)
    : engine_(engine),
      metrics_(metrics),
      calls_(calls),
      counted_(calls.TryEnter()),
      response_(response) {
  std::string request_id;
  std::optional<grpc::Status> error;
  {
    // Under mu_: once submitted, the engine may Deliver (and merge into
    // response_) before the request id is written.
    std::lock_guard<std::mutex> lock(mu_);
    error = Submit(this, context, *request, engine, counted_, &request_id);
    response_->set_request_id(request_id);
  }
  if (error) FinishOnce(*error, OutcomeLabel(*error));
}

void GenerateUnaryReactor::Deliver(RequestOutput output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_called_) return;
    Merge(output, *response_);
  }
  if (output.finished()) FinishOnce(grpc::Status::OK, FinishReasonLabel(output.finish_reason));
}

void GenerateUnaryReactor::DeliverAbort(absl::Status status) {
  const grpc::Status grpc_status = ToGrpcStatus(status, "Generate");
  FinishOnce(grpc_status, OutcomeLabel(grpc_status));
}

void GenerateUnaryReactor::FinishOnce(grpc::Status status, const std::string& outcome) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_called_) return;
    finish_called_ = true;
  }
  metrics_.RecordOutcome(outcome);
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
