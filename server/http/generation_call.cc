#include "server/http/generation_call.h"

namespace kvserve::http {

void CallTracker::Add() {
  std::lock_guard<std::mutex> lock(mu_);
  ++count_;
}

void CallTracker::Remove() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--count_ == 0) cv_.notify_all();
}

bool CallTracker::WaitForNone(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return count_ == 0; });
}

int CallTracker::count() {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

GenerationCall::GenerationCall(std::function<void()> notify, std::shared_ptr<CallTracker> tracker,
                               int max_unsent_tokens)
    : notify_(std::move(notify)), tracker_(std::move(tracker)), unsent_(max_unsent_tokens) {
  tracker_->Add();
}

GenerationCall::~GenerationCall() {
  notify_ = nullptr;  // before shutdown, waiting on the tracker, may go on
  tracker_->Remove();
}

void GenerationCall::Push(ChoiceEvent event) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(event));
    notify = !notified_;
    notified_ = true;
  }
  if (notify) notify_();
}

std::vector<ChoiceEvent> GenerationCall::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  notified_ = false;
  return std::exchange(queue_, {});
}

void ChoiceSink::OnOutput(RequestOutput output) {
  call_->Push(ChoiceEvent{choice_, std::move(output), std::nullopt});
}

void ChoiceSink::OnAbort(absl::Status status) {
  call_->Push(ChoiceEvent{choice_, RequestOutput{}, std::move(status)});
}

}  // namespace kvserve::http
