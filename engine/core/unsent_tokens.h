// Output back-pressure (issue 13 item 5, docs/backpressure.md): one
// request's count of tokens produced but not yet written to its client's
// transport. Past the limit the request is paused: the engine stops
// scheduling it (its KV blocks kept) until the client reads and the count
// falls to half the limit.
//
// Thread-safety: Produced, Written and Discard must be serialized by the
// caller (a gRPC reactor's mutex, an HTTP connection's strand); paused() is
// an atomic read, safe from any thread (the engine thread polls it through
// RequestSink::IsPaused at every step).
#pragma once

#include <atomic>

namespace kvserve {

class UnsentTokens {
 public:
  /// `limit` 0: never pause.
  explicit UnsentTokens(int limit = 0) : limit_(limit), resume_at_(limit / 2) {}

  /// `n` more tokens were queued for the transport.
  void Produced(int n) {
    count_ += n;
    if (limit_ > 0 && count_ >= limit_) paused_.store(true, std::memory_order_relaxed);
  }
  /// `n` tokens left for the client. True when this resumed the request:
  /// the caller wakes the engine, which may be idle waiting for it.
  bool Written(int n) {
    count_ = count_ > n ? count_ - n : 0;
    if (!paused_.load(std::memory_order_relaxed) || count_ > resume_at_) return false;
    paused_.store(false, std::memory_order_relaxed);
    return true;
  }
  /// Nothing will be written any more (the client is gone). True when this
  /// resumed the request, as for Written.
  bool Discard() { return Written(count_); }

  bool paused() const { return paused_.load(std::memory_order_relaxed); }
  int count() const { return count_; }
  int limit() const { return limit_; }

 private:
  const int limit_;
  const int resume_at_;  // the low-water mark: resume at or below it
  int count_ = 0;
  std::atomic<bool> paused_{false};
};

}  // namespace kvserve
