// The generation calls in flight, so that shutdown can end as soon as none is
// left. gRPC's Shutdown(deadline) waits for every open connection, idle ones
// too, until the deadline (issue 13 item 4: an idle client kept SIGTERM
// waiting the whole grace period); counting our own calls lets the server
// drain them, then shut gRPC down with no wait.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvserve {

class InFlightCalls {
 public:
  /// Counts a new call in; false once draining (the call must be refused).
  bool TryEnter();
  /// A call counted in by TryEnter has ended (its OnDone ran).
  void Exit();
  /// Refuses new calls from now on; the calls in flight go on.
  void BeginDrain();
  /// Refuses new calls from now on, then waits until none is in flight or
  /// `deadline` passes. True when none is left.
  bool Drain(absl::Time deadline);
  int count() const;

 private:
  mutable absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvserve
