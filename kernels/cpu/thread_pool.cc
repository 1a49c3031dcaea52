#include "kernels/cpu/thread_pool.h"

namespace kvserve::cpu {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::Shared() {
  static ThreadPool* pool = new ThreadPool();  // never destroyed: workers may outlive main's statics
  return *pool;
}

void ThreadPool::RunItems(const std::function<void(int)>& fn, int n) {
  for (int i; (i = next_.fetch_add(1)) < n;) fn(i);
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* fn;
    int n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      // The call's work, read with its generation: a worker that wakes late
      // must not pair one call's item count with another's function.
      seen = generation_;
      fn = fn_;
      n = n_;
      ++busy_workers_;
    }
    if (fn != nullptr) RunItems(*fn, n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_workers_;
    }
    done_cv_.notify_one();
  }
}

void ThreadPool::ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    // A worker that woke too late for the previous call may still be in
    // RunItems; resetting next_ under it would hand it this call's items.
    done_cv_.wait(lock, [&] { return busy_workers_ == 0; });
    fn_ = &fn;
    n_ = n;
    next_.store(0);
    ++generation_;
  }
  work_cv_.notify_all();
  RunItems(fn, n);
  // Every item is claimed once next_ passes n_; wait for workers still inside one.
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return busy_workers_ == 0; });
  fn_ = nullptr;
}

}  // namespace kvserve::cpu
