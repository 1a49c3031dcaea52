// The CPU backend's fork-join pool (kernels/cpu/thread_pool.h): every item
// of every call runs exactly once, whether the workers are still spinning
// from the previous call (calls back to back, as in a decode step) or have
// gone to sleep (a pause longer than kSpinMicros); the call returns only
// after all its items finished; and a pool is destroyed cleanly in either
// state. Correctness only: the wake-up time it saves is measured in the
// benchmarks (docs/cpu_threading.md), not here.
#include "kernels/cpu/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kvserve::testing {
namespace {

using cpu::ThreadPool;

// Runs `calls` ParallelFors of `items` items, each item counting its index,
// sleeping `pause` between calls; checks every count is exactly `calls`.
void ExpectEachItemOnce(ThreadPool& pool, int calls, int items, std::chrono::microseconds pause) {
  std::vector<std::atomic<int>> counts(items);
  for (int c = 0; c < calls; ++c) {
    std::atomic<int> finished{0};
    pool.ParallelFor(items, [&](int i) {
      counts[i].fetch_add(1);
      finished.fetch_add(1);
    });
    // Every item finished before ParallelFor returned.
    ASSERT_EQ(finished.load(), items) << "call " << c;
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
  for (int i = 0; i < items; ++i) EXPECT_EQ(counts[i].load(), calls) << "item " << i;
}

TEST(ThreadPoolTest, CallsBackToBackRunEachItemOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    ExpectEachItemOnce(pool, 2000, 7, std::chrono::microseconds(0));
  }
}

TEST(ThreadPoolTest, CallsAfterTheWorkersSleptRunEachItemOnce) {
  ThreadPool pool(4);
  // Longer than the spin: the workers block and must be woken.
  ExpectEachItemOnce(pool, 20, 9, std::chrono::microseconds(3 * ThreadPool::kSpinMicros));
}

TEST(ThreadPoolTest, PausesAroundTheSpinTimeRunEachItemOnce) {
  // Workers that stop spinning just as a call is published are the racy case.
  ThreadPool pool(3);
  for (int pause :
       {ThreadPool::kSpinMicros / 2, ThreadPool::kSpinMicros, ThreadPool::kSpinMicros + 20}) {
    ExpectEachItemOnce(pool, 50, 5, std::chrono::microseconds(pause));
  }
}

TEST(ThreadPoolTest, SlowItemsAreWaitedFor) {
  ThreadPool pool(3);
  std::atomic<int> done{0};
  pool.ParallelFor(6, [&](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * ThreadPool::kSpinMicros / 1000 + 5));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 6);
}

TEST(ThreadPoolTest, ZeroOrOneItem) {
  ThreadPool pool(2);
  int runs = 0;
  pool.ParallelFor(0, [&](int) { ++runs; });
  EXPECT_EQ(runs, 0);
  pool.ParallelFor(1, [&](int i) { runs += 1 + i; });
  EXPECT_EQ(runs, 1);
}

TEST(ThreadPoolTest, DestroyedWhileWorkersSpinOrSleep) {
  {
    ThreadPool pool(4);
    pool.ParallelFor(8, [](int) {});
  }  // workers still spinning
  {
    ThreadPool pool(4);
    pool.ParallelFor(8, [](int) {});
    std::this_thread::sleep_for(std::chrono::microseconds(3 * ThreadPool::kSpinMicros));
  }  // workers asleep
  {
    ThreadPool pool(4);  // never used
  }
}

}  // namespace
}  // namespace kvserve::testing
