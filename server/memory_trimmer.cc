#include "server/memory_trimmer.h"

#include <malloc.h>

#include "base/logging.h"

namespace kvserve {

MemoryTrimmer::MemoryTrimmer(absl::Duration interval)
    : interval_(interval), thread_([this] { Loop(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void MemoryTrimmer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) {
    mu_.Unlock();  // trimming locks malloc's arenas, not ours
    const absl::Time start = absl::Now();
    const bool released = malloc_trim(0) != 0;
    const absl::Duration took = absl::Now() - start;
    if (released) KV_LOG(DEBUG) << "malloc_trim: released memory in " << took;
    mu_.Lock();
  }
}

}  // namespace kvserve
