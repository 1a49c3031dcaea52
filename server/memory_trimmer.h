// Hands the heap's free memory back to the OS at an interval.
//
// Why: an HTTP/2 rapid reset (streams opened and cancelled at once, issue 13
// item 1) makes gRPC allocate and free per-stream state by the hundred MB.
// All of it is freed, but glibc keeps freed memory scattered between live
// chunks in its arenas, so RSS never came down (3 x 20,000 streams: +400 MB
// for good). malloc_trim(0) returns those free pages (madvise); measured on
// such a heap it brings RSS back near its baseline (docs/limits.md).
#pragma once

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvserve {

class MemoryTrimmer {
 public:
  /// Starts a thread calling malloc_trim(0) every `interval` (> 0).
  explicit MemoryTrimmer(absl::Duration interval);
  /// Stops the thread (at once, not after the interval).
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

 private:
  void Loop();

  const absl::Duration interval_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace kvserve
