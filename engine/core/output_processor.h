// The output stage: its own thread turns the engine's token ids into what
// clients see. It owns each request's sink, detokenizer and stop-string
// matcher, builds the RequestOutputs, and reports each iteration's stats to a
// StatsObserver. So the engine thread does no text work and no metrics work.
//
// A stop string that matches before the engine finished the request: the
// final output is held, the engine is asked to stop the sequence, and the
// output goes to the client once the engine's terminal event for it arrives
// (normally StopApplied). So, as for every other finish, the KV blocks are
// free before the client sees the end, and nothing reaches a sink after it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/core/engine_output.h"
#include "engine/core/iteration_stats.h"
#include "engine/text/detokenizer.h"
#include "engine/text/tokenizer.h"

namespace kvserve {

class OutputProcessor {
 public:
  /// `tokenizer` (null: no text) and `stats` (null: none) are borrowed and must
  /// outlive this. `request_stop` is called on the output thread when a stop
  /// string ends a request the engine still runs; `request_ended` after a
  /// request's sink saw its end.
  OutputProcessor(const Tokenizer* tokenizer, StatsObserver* stats,
                  std::function<void(SeqId)> request_stop, std::function<void()> request_ended);
  ~OutputProcessor();
  OutputProcessor(const OutputProcessor&) = delete;
  OutputProcessor& operator=(const OutputProcessor&) = delete;

  /// Queues one iteration's output; never blocks on a sink.
  void Push(EngineIterationOutput output);
  /// Processes everything queued, then joins the thread. Idempotent.
  void Stop();

 private:
  struct RequestState {
    std::shared_ptr<RequestSink> sink;
    std::unique_ptr<IncrementalDetokenizer> detokenizer;  // null without a tokenizer
    std::unique_ptr<StopStringMatcher> stops;
    uint32_t prompt_tokens = 0;
    uint32_t completion_tokens = 0;
    bool capture_logits = false;
    absl::Time arrival;
    absl::Time last_token;
    /// Set when a stop string ended the request before the engine did: the
    /// final output, delivered at the engine's terminal event.
    std::optional<RequestOutput> held_final;
  };

  /// What a sink is handed, held until the iteration's stats are published.
  struct Delivery {
    std::shared_ptr<RequestSink> sink;
    std::optional<RequestOutput> output;  // set: OnOutput; empty: OnAbort(abort)
    absl::Status abort;
  };

  void Loop();
  void Process(EngineIterationOutput& output);
  void Handle(RequestAdded& event);
  void Handle(TokenSampled& event, IterationStats& stats);
  void Handle(RequestAborted& event);
  void Handle(StopApplied& event);
  /// Delivers a held stop-string finish, if any, and forgets the request.
  /// Returns false when nothing was held.
  bool DeliverHeld(SeqId id);
  void Deliver(std::shared_ptr<RequestSink> sink, RequestOutput output);
  void DeliverAbort(std::shared_ptr<RequestSink> sink, absl::Status status);

  const Tokenizer* tokenizer_;
  StatsObserver* stats_;
  std::function<void(SeqId)> request_stop_;
  std::function<void()> request_ended_;

  std::map<SeqId, RequestState> requests_;  // output thread only
  std::vector<Delivery> deliveries_;        // output thread only, one iteration's

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineIterationOutput> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::thread thread_;
};

}  // namespace kvserve
