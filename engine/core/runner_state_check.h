// A debug check that the model runner's own view of the running sequences,
// built only from ScheduleOutput messages, equals the scheduler's: same
// sequences, tokens, block tables and computed counts. Run after every step
// when EngineConfig::verify_runner_state is set (tests).
#pragma once

#include "absl/status/status.h"
#include "engine/core/runner_state.h"
#include "engine/core/scheduler.h"

namespace kvserve {

/// InternalError naming the first sequence and field that differ.
absl::Status VerifyRunnerState(const Scheduler& scheduler, const RunnerState& runner);

}  // namespace kvserve
