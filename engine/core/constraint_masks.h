// The structured-output half of a sampling step: for each sampled row whose
// sequence has a constraint, replays the tokens generated since the last
// step into its matcher, builds the row's allowed-token mask (the
// constraint's cached mask for that state, plus the end tokens where the
// constraint may end) and has the backend apply them before Sample.
//
// Off the critical path: the masks are built on a worker thread while the
// model's forward runs (Start before the forward, Apply after it waits for
// them), so on a GPU a mask seen for the first time (milliseconds at a 128k
// vocabulary) costs nothing unless it outlasts the forward. A step without
// constrained rows skips all of it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
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

  ~ConstraintMasks();

  void Clear();
  /// Sampled row `row` of this step belongs to `seq`; does nothing without a
  /// constraint. `seq` must stay put until Apply returns.
  void Add(int row, RunnerSequence& seq);
  bool empty() const { return rows_.empty(); }
  /// Starts building the masks of the rows added, on the worker thread.
  void Start();
  /// Waits for them, uploads them and masks `logits` [S, V] in place.
  absl::Status Apply(Tensor logits);
  /// Waits until the worker is idle (the runner calls it before it changes
  /// any sequence: a step that failed between Start and Apply left it busy).
  void Wait();

 private:
  ConstraintMasks(Backend& backend, int max_seqs, int vocab);
  // Advances `m` over the tokens `seq` generated since; false if it died.
  static bool CatchUp(RunnerSequence& seq);
  void Build();  // every added row's mask, into host_
  void BuildRow(size_t i);
  void WorkerLoop();

  Backend& backend_;
  int max_seqs_ = 0;
  int vocab_ = 0;
  int words_ = 0;  // per mask
  DeviceBufferPtr buffer_;  // rows, then masks
  std::vector<int32_t> rows_;
  std::vector<RunnerSequence*> seqs_;
  std::vector<uint32_t> host_;  // rows_.size() masks of words_ words
  std::vector<uint32_t> narrow_;  // a constraint's mask when its vocabulary is narrower
  // The worker: Start hands it the step's rows, Apply waits until it is done.
  std::mutex mu_;
  std::condition_variable cv_;
  bool work_ = false, done_ = true, quit_ = false;
  std::thread worker_;
  std::vector<uint32_t> staging_;
};

}  // namespace kvserve
