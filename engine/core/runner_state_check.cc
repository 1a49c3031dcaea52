#include "engine/core/runner_state_check.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvserve {

absl::Status VerifyRunnerState(const Scheduler& scheduler, const RunnerState& runner) {
  std::vector<SeqId> running = scheduler.running();
  std::sort(running.begin(), running.end());
  const std::vector<SeqId> held = runner.sequence_ids();
  // A running sequence the last step did not schedule (a prompt chunk left
  // without budget) was still sent when it was admitted, so the sets match.
  if (running != held) {
    return absl::InternalError(absl::StrCat("runner holds sequences [", absl::StrJoin(held, ", "),
                                            "], the scheduler runs [",
                                            absl::StrJoin(running, ", "), "]"));
  }
  for (SeqId id : running) {
    const Sequence& want = *scheduler.Get(id);
    const RunnerSequence& got = *runner.Find(id);
    const auto blocks = runner.BlockIds(got);
    const char* field = nullptr;
    if (got.tokens != want.tokens) {
      field = "tokens";
    } else if (!std::equal(blocks.begin(), blocks.end(), want.block_table.begin(),
                           want.block_table.end())) {
      field = "block table";
    } else if (got.num_computed != want.num_computed) {
      field = "computed count";
    } else if (got.prompt_len != want.prompt_len) {
      field = "prompt length";
    }
    if (field != nullptr) {
      return absl::InternalError(absl::StrCat("runner's ", field, " of sequence ", id,
                                              " differs from the scheduler's"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve
