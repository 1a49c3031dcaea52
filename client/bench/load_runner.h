// Drives one load level against the server and records every request:
// closed loop (a fixed number of clients, each sending its next request when
// the last one ends) or open loop (requests arrive at a rate, Poisson or
// evenly spaced, whether or not earlier ones finished). A warm-up runs first
// at the same load and is excluded from the records.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/bench/bench_config.h"
#include "client/bench/workload.h"
#include "client/client.h"

namespace kvserve::bench {

struct RequestRecord {
  int64_t index = 0;
  int prompt_tokens = 0;   // from the server's usage when it answered
  int output_tokens = 0;   // tokens received
  absl::Time sent;
  absl::Time first_chunk = absl::InfiniteFuture();
  absl::Time done;
  std::vector<absl::Time> chunk_times;
  std::vector<int> chunk_tokens;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string error;
  std::string request_id;  // sent with the request (workload.cc: "bench-<index>")
  std::string replica;     // the address that gave the final answer
  int attempts = 1;        // failovers and retries included
  int failovers = 0;
  bool ok() const { return code == grpc::StatusCode::OK; }
};

struct LevelRun {
  std::string label;     // "concurrency 8" or "rate 4/s"
  int concurrency = 0;   // closed loop
  double rate = 0;       // open loop
  absl::Time start;      // first measured request sent
  absl::Time end;        // last measured request ended
  std::vector<RequestRecord> records;
};

class LoadRunner {
 public:
  LoadRunner(Client& client, const Workload& workload, const BenchConfig& config)
      : client_(client), workload_(workload), config_(config) {}

  /// `on_measure_start` runs after the warm-up, right before the measured
  /// requests (to snapshot the server's counters); `on_measure_end` right after.
  LevelRun RunClosedLoop(int concurrency, const std::function<void()>& on_measure_start = {},
                         const std::function<void()>& on_measure_end = {});
  LevelRun RunOpenLoop(double rate, const std::function<void()>& on_measure_start = {},
                       const std::function<void()>& on_measure_end = {});

 private:
  RequestRecord Send(int64_t index);
  /// The record of a finished stream, counted in the progress totals.
  RequestRecord Record(int64_t index, const StreamResult& r, const PlannedRequest& planned);
  void Progress(const std::string& label, bool final);

  Client& client_;
  const Workload& workload_;
  const BenchConfig& config_;
  int64_t next_index_ = 0;  // request indices run on across levels
  std::atomic<int> sent_{0}, done_{0}, failed_{0};
  std::atomic<int64_t> tokens_{0};
  absl::Time level_start_;
};

}  // namespace kvserve::bench
