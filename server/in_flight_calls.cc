#include "server/in_flight_calls.h"

namespace kvserve {

bool InFlightCalls::TryEnter() {
  absl::MutexLock lock(&mu_);
  if (draining_) return false;
  ++count_;
  return true;
}

void InFlightCalls::Exit() {
  absl::MutexLock lock(&mu_);
  --count_;
}

void InFlightCalls::BeginDrain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

bool InFlightCalls::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

int InFlightCalls::count() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

}  // namespace kvserve
