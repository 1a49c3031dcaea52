// One HTTP generation request on its way through the engine: its n engine
// requests (choices) share a cancel flag, and their outputs are queued here
// by the engine's output thread and taken by the connection's strand.
//
// The output thread must never block, so Push only appends under a short
// lock and, when the queue was empty, asks `notify` to post one drain to the
// connection's strand (outputs that arrive meanwhile ride along).
//
// Back-pressure (docs/backpressure.md): the strand counts the streamed tokens
// not yet written to the socket in `unsent()`; past the limit every choice is
// paused by the engine until the client reads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/request.h"
#include "engine/core/unsent_tokens.h"

namespace kvserve::http {

/// Counts the calls the engine still holds, so that shutdown can wait for them.
class CallTracker {
 public:
  void Add();
  void Remove();
  /// True when none is left by `deadline`.
  bool WaitForNone(std::chrono::steady_clock::time_point deadline);
  int count();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

struct ChoiceEvent {
  int choice = 0;
  RequestOutput output;
  std::optional<absl::Status> abort;  // set: the choice ended early
};

class GenerationCall {
 public:
  /// `notify` is called on the output thread, at most once per Take.
  /// `max_unsent_tokens` (0: unlimited) bounds the tokens of all choices
  /// together that may wait unwritten.
  GenerationCall(std::function<void()> notify, std::shared_ptr<CallTracker> tracker,
                 int max_unsent_tokens = 0);
  ~GenerationCall();
  GenerationCall(const GenerationCall&) = delete;
  GenerationCall& operator=(const GenerationCall&) = delete;

  void Push(ChoiceEvent event);
  /// Everything queued since the last Take; rearms `notify`.
  std::vector<ChoiceEvent> Take();

  /// Polled by the engine each step: every choice of a cancelled call aborts.
  bool cancelled() const { return cancelled_.load(); }
  void Cancel() { cancelled_.store(true); }
  /// The connection's strand only, except paused() (the engine polls it).
  UnsentTokens& unsent() { return unsent_; }
  bool paused() const { return unsent_.paused(); }

 private:
  std::function<void()> notify_;
  std::shared_ptr<CallTracker> tracker_;
  std::atomic<bool> cancelled_{false};
  UnsentTokens unsent_;
  std::mutex mu_;
  std::vector<ChoiceEvent> queue_;  // guarded by mu_
  bool notified_ = false;           // guarded by mu_
};

/// The engine's handle on one choice of a call.
class ChoiceSink final : public RequestSink {
 public:
  ChoiceSink(std::shared_ptr<GenerationCall> call, int choice)
      : call_(std::move(call)), choice_(choice) {}
  void OnOutput(RequestOutput output) override;
  void OnAbort(absl::Status status) override;
  bool IsCancelled() const override { return call_->cancelled(); }
  bool IsPaused() const override { return call_->paused(); }

 private:
  std::shared_ptr<GenerationCall> call_;
  int choice_;
};

}  // namespace kvserve::http
