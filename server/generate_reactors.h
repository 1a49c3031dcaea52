// The gRPC side of Generate and GenerateStream (callback API).
//
// A reactor converts the request, submits it to the engine with a sink, and
// turns what the engine delivers into responses. Lifetime: each reactor is
// reference counted, one reference for gRPC (dropped in OnDone) and one for
// the engine's sink (dropped when the engine releases the request), so
// neither side ever touches a deleted reactor. gRPC operations (StartWrite,
// Finish) are started outside the reactor's mutex, because gRPC may run the
// resulting reactions inline on the calling thread. Each counts itself in
// InFlightCalls from construction to OnDone (refused with UNAVAILABLE once
// the server drains), so that shutdown knows when nothing is in flight.
// Each writes its request's access-log line when it finishes (access_log.h).
//
// Back-pressure (docs/backpressure.md): gRPC allows one write in flight, and
// a write completes only once the transport's flow-control window lets it
// go. A stream reactor counts the tokens merged into its pending message or
// in the write in flight; past --max_unsent_tokens the engine pauses the
// request, and the write completion that brings the count back down wakes
// the engine.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "engine/core/engine.h"
#include "engine/core/unsent_tokens.h"
#include "kvserve/v1/inference.grpc.pb.h"
#include "server/access_log.h"
#include "server/in_flight_calls.h"
#include "server/server_metrics.h"
#include "server/tool_calls/tool_call_streamer.h"

namespace kvserve {

/// Chat with tools: turns each engine output's text into content and the
/// calls that closed in it, merged into a response message.
class ToolCallOutputs {
 public:
  explicit ToolCallOutputs(tool_calls::ToolCallPlan plan);
  /// Rewrites output.text to the content, then merges it and the calls into `msg`.
  void Merge(RequestOutput& output, v1::GenerateResponse& msg);

 private:
  std::optional<tool_calls::ToolCallStreamer> streamer_;  // empty: kOff
  size_t sent_ = 0;                                       // calls merged so far
};

/// Deletes itself when the last reference goes.
class RefCountedReactor {
 public:
  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

 protected:
  virtual ~RefCountedReactor() = default;

 private:
  std::atomic<int> refs_{1};  // gRPC's reference
};

class GenerateStreamReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse>,
                                    public RefCountedReactor {
 public:
  /// `rpc`: the method's name, for the access log (GenerateStream, ChatStream).
  /// `tools`: how a chat's output becomes tool calls (kOff: it does not).
  GenerateStreamReactor(grpc::CallbackServerContext* context, const v1::GenerateRequest* request,
                        Engine& engine, ServerMetrics& metrics, InFlightCalls& calls,
                        const char* rpc, tool_calls::ToolCallPlan tools = {});

  // From the engine thread, through the sink.
  void Deliver(RequestOutput output);
  void DeliverAbort(absl::Status status);
  bool cancelled() const { return cancelled_.load(); }
  /// The client has too many tokens unwritten (polled by the engine).
  bool paused() const { return unsent_.paused(); }

  // gRPC reactions.
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void Pump();  // starts the next write, or the finish when due

  Engine& engine_;
  ServerMetrics& metrics_;
  InFlightCalls& calls_;
  const bool counted_;  // counted in calls_ (false: refused, the server drains)
  std::string request_id_;
  std::atomic<bool> cancelled_{false};

  std::mutex mu_;
  UnsentTokens unsent_;             // Produced/Written under mu_
  v1::GenerateResponse pending_;    // merged outputs not yet written
  int pending_tokens_ = 0;          // tokens in pending_
  int in_flight_tokens_ = 0;        // tokens in in_flight_
  bool has_pending_ = false;
  bool sent_request_id_ = false;    // a message carrying request_id is queued or written
  v1::GenerateResponse in_flight_;  // owned by gRPC between StartWrite and OnWriteDone
  bool writing_ = false;            // from StartWrite until OnWriteDone
  // From StartWrite until it returns. gRPC serializes in_flight_ inside
  // StartWrite, and OnWriteDone may run on another thread before it returns;
  // in_flight_ is reused only once both are over, so that the reuse is
  // ordered after the serialization by mu_ (the hand-off inside the
  // uninstrumented libgrpc is invisible to ThreadSanitizer).
  bool starting_write_ = false;
  bool write_failed_ = false;       // the client is gone; drop further writes
  std::optional<grpc::Status> final_status_;
  bool finish_called_ = false;
  AccessRecord access_;  // under mu_; outcome set with final_status_
  absl::Time start_;
  ToolCallOutputs tools_;  // under mu_
};

class GenerateUnaryReactor final : public grpc::ServerUnaryReactor, public RefCountedReactor {
 public:
  /// `rpc`: the method's name, for the access log (Generate, Chat).
  GenerateUnaryReactor(grpc::CallbackServerContext* context, const v1::GenerateRequest* request,
                       v1::GenerateResponse* response, Engine& engine, ServerMetrics& metrics,
                       InFlightCalls& calls, const char* rpc, tool_calls::ToolCallPlan tools = {});

  void Deliver(RequestOutput output);
  void DeliverAbort(absl::Status status);
  bool cancelled() const { return cancelled_.load(); }
  /// Never: a unary call sends nothing before the end.
  bool paused() const { return false; }

  void OnCancel() override;
  void OnDone() override;

 private:
  void FinishOnce(grpc::Status status, const std::string& outcome);

  Engine& engine_;
  ServerMetrics& metrics_;
  InFlightCalls& calls_;
  const bool counted_;
  v1::GenerateResponse* response_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  bool finish_called_ = false;
  AccessRecord access_;  // under mu_
  absl::Time start_;
  ToolCallOutputs tools_;  // under mu_
};

}  // namespace kvserve
