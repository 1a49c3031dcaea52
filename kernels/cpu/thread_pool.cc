#include "kernels/cpu/thread_pool.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvserve::cpu {
namespace {

// A hint to the core that this thread is spinning (frees its sibling's
// pipeline on SMT cores).
inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

}  // namespace

template <typename Pred>
bool ThreadPool::SpinUntil(const Pred& pred) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {  // the clock is read once per 64 polls
      if (pred()) return true;
      CpuRelax();
    }
    if (Clock::now() >= deadline) return pred();
  }
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stopping_.store(true);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::Shared() {
  static ThreadPool* pool =
      new ThreadPool();  // never destroyed: workers may outlive main's statics
  return *pool;
}

void ThreadPool::RunItems(const std::function<void(int)>& fn, int n) {
  for (int i; (i = next_.fetch_add(1)) < n;) fn(i);
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    // Poll first: the next call usually comes within microseconds.
    SpinUntil(
        [&] { return published_.load(std::memory_order_acquire) != seen || stopping_.load(); });
    const std::function<void(int)>* fn;
    int n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      // The call's work, read with its generation under mu_: a worker that
      // wakes late must not pair one call's item count with another's
      // function, and one that comes after the call ended finds fn_ null.
      seen = generation_;
      fn = fn_;
      n = n_;
      busy_workers_.fetch_add(1);
    }
    if (fn != nullptr) RunItems(*fn, n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_workers_.fetch_sub(1);
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
    done_cv_.wait(lock, [&] { return busy_workers_.load() == 0; });
    fn_ = &fn;
    n_ = n;
    next_.store(0);
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  // Wakes only workers that stopped spinning (no system call when none sleep).
  work_cv_.notify_all();
  RunItems(fn, n);
  // Every item is claimed once next_ passes n_; wait for workers still inside
  // one, polling first.
  SpinUntil([&] { return busy_workers_.load() == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return busy_workers_.load() == 0; });
  fn_ = nullptr;
}

}  // namespace kvserve::cpu
