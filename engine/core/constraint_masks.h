// The structured-output half of a sampling step: for each sampled row whose
// sequence has a constraint, replays the tokens generated since the last
// step into its matcher, builds the row's allowed-token mask (the
// constraint's cached mask for that state, plus the end tokens where the
// constraint may end) and has the backend apply them before Sample.
// Unconstrained rows cost nothing: a step without constrained rows skips all
// of it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/runner_state.h"
#include "kernels/backend.h"

namespace kvserve {

class ConstraintMasks {
 public:
  /// Room for `max_seqs` masks over a `vocab`-wide logits row.
  static absl::StatusOr<std::unique_ptr<ConstraintMasks>> Create(Backend& backend, int max_seqs,
                                                                 int vocab);

  void Clear();
  /// Sampled row `row` of this step belongs to `seq`; does nothing without a
  /// constraint.
  void Add(int row, RunnerSequence& seq);
  bool empty() const { return rows_.empty(); }
  /// Uploads the masks and masks `logits` [S, V] in place.
  absl::Status Apply(Tensor logits);

  /// Rows whose matcher could not follow the tokens (a token outside the
  /// constraint, or the automaton over its size limit) and were given the
  /// end tokens only, since the engine started.
  uint64_t num_dead_rows() const { return dead_rows_; }

 private:
  ConstraintMasks(Backend& backend, int max_seqs, int vocab);
  // Advances `m` over the tokens `seq` generated since; false if it died.
  static bool CatchUp(RunnerSequence& seq);

  Backend& backend_;
  int max_seqs_ = 0;
  int vocab_ = 0;
  int words_ = 0;  // per mask
  DeviceBufferPtr buffer_;  // rows, then masks
  std::vector<int32_t> rows_;
  std::vector<uint32_t> host_;  // rows_.size() masks of words_ words
  std::vector<uint32_t> staging_;
  uint64_t dead_rows_ = 0;
};

}  // namespace kvserve
