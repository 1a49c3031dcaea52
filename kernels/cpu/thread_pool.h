// A small fork-join pool for the CPU backend's loops that BLAS does not
// parallelize (decode attention). The calling thread works too, so a pool of
// N threads has N - 1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvserve::cpu {

class ThreadPool {
 public:
  /// `num_threads` 0: one per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(i) for every i in [0, n), spread over the threads, and returns
  /// when all are done. Not reentrant: one ParallelFor at a time.
  void ParallelFor(int n, const std::function<void(int)>& fn);

  /// The process-wide pool.
  static ThreadPool& Shared();

 private:
  void WorkerLoop();
  void RunItems(const std::function<void(int)>& fn, int n);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* fn_ = nullptr;  // guarded by mu_
  int n_ = 0;                // guarded by mu_
  uint64_t generation_ = 0;  // guarded by mu_; bumped per ParallelFor
  int busy_workers_ = 0;     // guarded by mu_
  bool stop_ = false;        // guarded by mu_
  std::atomic<int> next_{0};
};

}  // namespace kvserve::cpu
