#include "engine/core/sequence.h"

namespace kvserve {

absl::string_view SequenceStatusName(SequenceStatus status) {
  switch (status) {
    case SequenceStatus::kWaiting: return "waiting";
    case SequenceStatus::kRunning: return "running";
    case SequenceStatus::kPreempted: return "preempted";
    case SequenceStatus::kFinished: return "finished";
  }
  return "?";
}

}  // namespace kvserve
