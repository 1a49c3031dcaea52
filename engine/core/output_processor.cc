#include "engine/core/output_processor.h"

#include <utility>

#include "base/logging.h"

namespace kvserve {

OutputProcessor::OutputProcessor(const Tokenizer* tokenizer, StatsObserver* stats,
                                 std::function<void(SeqId)> request_stop,
                                 std::function<void()> request_ended)
    : tokenizer_(tokenizer),
      stats_(stats),
      request_stop_(std::move(request_stop)),
      request_ended_(std::move(request_ended)) {
  thread_ = std::thread([this] { Loop(); });
}

OutputProcessor::~OutputProcessor() { Stop(); }

void OutputProcessor::Push(EngineIterationOutput output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(output));
  }
  cv_.notify_one();
}

void OutputProcessor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void OutputProcessor::Loop() {
  for (;;) {
    std::deque<EngineIterationOutput> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything is processed
      batch.swap(queue_);
    }
    for (EngineIterationOutput& output : batch) Process(output);
  }
  // The engine ends every request before it stops us; anything left means a
  // lost terminal event, which would leave a client waiting forever.
  for (auto& [id, state] : requests_) {
    KV_LOG(ERROR) << "output stage stopped with request " << id << " unfinished";
    request_ended_();
    state.sink->OnAbort(absl::InternalError("the engine stopped without ending the request"));
  }
  requests_.clear();
}

void OutputProcessor::Process(EngineIterationOutput& output) {
  IterationStats& stats = output.stats;
  for (EngineEvent& event : output.events) {
    std::visit(
        [&](auto& e) {
          if constexpr (std::is_same_v<std::decay_t<decltype(e)>, TokenSampled>) {
            Handle(e, stats);
          } else {
            Handle(e);
          }
        },
        event);
  }
  // Stats first, then the clients: a client that saw its request end and
  // then scrapes /metrics sees this iteration (its tokens counted, its KV
  // blocks back), never the one before.
  if (stats_) stats_->OnIteration(stats);
  for (Delivery& d : deliveries_) {
    if (d.output) {
      d.sink->OnOutput(*std::move(d.output));
    } else {
      d.sink->OnAbort(std::move(d.abort));
    }
  }
  deliveries_.clear();
}

void OutputProcessor::Deliver(std::shared_ptr<RequestSink> sink, RequestOutput output) {
  deliveries_.push_back(Delivery{std::move(sink), std::move(output), absl::OkStatus()});
}

void OutputProcessor::DeliverAbort(std::shared_ptr<RequestSink> sink, absl::Status status) {
  deliveries_.push_back(Delivery{std::move(sink), std::nullopt, std::move(status)});
}

void OutputProcessor::Handle(RequestAdded& event) {
  RequestState state;
  state.sink = std::move(event.sink);
  if (tokenizer_) {
    state.detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer_);
    state.stops = std::make_unique<StopStringMatcher>(std::move(event.stop));
  }
  state.prompt_tokens = event.prompt_tokens;
  state.capture_logits = event.capture_logits;
  state.arrival = event.arrival;
  requests_.emplace(event.id, std::move(state));
}

void OutputProcessor::Handle(TokenSampled& event, IterationStats& stats) {
  auto it = requests_.find(event.id);
  if (it == requests_.end()) return;  // cannot happen: RequestAdded comes first
  RequestState& req = it->second;
  if (req.held_final) {
    // A stop string ended it; these are tokens the engine ran before it saw
    // the stop. Only its terminal event matters now.
    if (event.finish != FinishReason::kNone) DeliverHeld(event.id);
    return;
  }

  const absl::Time now = stats.time;
  ++req.completion_tokens;
  ++stats.num_generation_tokens;
  if (req.completion_tokens == 1) {
    stats.time_to_first_token_s.push_back(absl::ToDoubleSeconds(now - req.arrival));
  } else {
    stats.inter_token_latency_s.push_back(absl::ToDoubleSeconds(now - req.last_token));
  }
  req.last_token = now;

  FinishReason reason = event.finish;
  std::string text;
  if (req.detokenizer) {
    text = req.stops->Feed(req.detokenizer->Append(event.token));
    if (req.stops->stopped()) reason = FinishReason::kStop;
  }
  if (reason != FinishReason::kNone && req.detokenizer && !req.stops->stopped()) {
    // Release what was held back: the last partial character, a partial stop string.
    text += req.stops->Feed(req.detokenizer->Finish());
    if (req.stops->stopped()) {
      reason = FinishReason::kStop;
    } else {
      text += req.stops->Flush();
    }
  }

  RequestOutput out;
  out.token_ids.push_back(event.token);
  out.text = std::move(text);
  out.finish_reason = reason;
  out.prompt_tokens = req.prompt_tokens;
  out.completion_tokens = req.completion_tokens;
  if (req.capture_logits) out.logits.push_back(std::move(event.logits));
  if (event.logprobs) out.logprobs.push_back(*std::move(event.logprobs));
  if (reason == FinishReason::kNone) {
    Deliver(req.sink, std::move(out));
    return;
  }
  stats.e2e_latency_s.push_back(absl::ToDoubleSeconds(now - req.arrival));
  if (event.finish == FinishReason::kNone) {
    // Only a stop string ended it: the engine still holds the sequence.
    req.held_final = std::move(out);
    request_stop_(event.id);
    return;
  }
  std::shared_ptr<RequestSink> sink = std::move(req.sink);
  requests_.erase(it);
  request_ended_();  // before the end is visible: a client that saw it sees the count down
  Deliver(std::move(sink), std::move(out));
}

void OutputProcessor::Handle(RequestAborted& event) {
  // A cancel that raced a stop-string finish: the finish happened first.
  if (DeliverHeld(event.id)) return;
  auto it = requests_.find(event.id);
  if (it == requests_.end()) return;
  std::shared_ptr<RequestSink> sink = std::move(it->second.sink);
  requests_.erase(it);
  request_ended_();
  DeliverAbort(std::move(sink), std::move(event.status));
}

void OutputProcessor::Handle(StopApplied& event) {
  if (!DeliverHeld(event.id)) {
    KV_LOG(ERROR) << "the engine stopped request " << event.id << " that the output stage did not";
  }
}

bool OutputProcessor::DeliverHeld(SeqId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || !it->second.held_final) return false;
  std::shared_ptr<RequestSink> sink = std::move(it->second.sink);
  RequestOutput out = *std::move(it->second.held_final);
  requests_.erase(it);
  request_ended_();
  Deliver(std::move(sink), std::move(out));
  return true;
}

}  // namespace kvserve
