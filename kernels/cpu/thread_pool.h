// A small fork-join pool for the CPU backend's loops (the products' column
// slices, attention's heads, rounding activations). The calling thread works
// too, so a pool of N threads has N - 1 workers.
//
// Workers spin for a short while (kSpinMicros) after each call before they
// sleep on the condition variable, and the caller spins the same while for
// them to finish: a decode step makes over a hundred calls back to back, and
// waking a sleeping thread took ~100 µs on the VMs measured, a quarter of a
// batch-1 step (docs/cpu_threading.md).
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
  /// How long an idle worker (or the caller waiting for workers) polls
  /// before it blocks.
  static constexpr int kSpinMicros = 200;

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
  // Polls until pred() or kSpinMicros pass; returns pred().
  template <typename Pred>
  static bool SpinUntil(const Pred& pred);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* fn_ = nullptr;  // guarded by mu_
  int n_ = 0;                // guarded by mu_
  uint64_t generation_ = 0;  // guarded by mu_; bumped per ParallelFor
  bool stop_ = false;        // guarded by mu_
  // Written under mu_, read without it by the spinning threads (which take
  // mu_ before acting on what they saw).
  std::atomic<uint64_t> published_{0};  // generation_'s latest value
  std::atomic<int> busy_workers_{0};    // workers inside a call's items
  std::atomic<bool> stopping_{false};   // stop_
  std::atomic<int> next_{0};
};

}  // namespace kvserve::cpu
