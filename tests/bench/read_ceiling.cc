#include "tests/bench/read_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace kvserve::bench {

double ReadCeiling() {
  cpu::ThreadPool& pool = cpu::ThreadPool::Shared();
  const size_t n = size_t(1) << 28;  // floats
  std::vector<float> buf(n, 1.f);
  const int parts = pool.num_threads();
  std::vector<float> sums(parts);
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    pool.ParallelFor(parts, [&](int p) {
      const float* b = buf.data() + n / parts * p;
      float acc[16] = {};  // independent sums: vectorized without -ffast-math
      for (size_t i = 0; i + 16 <= n / parts; i += 16)
        for (int t = 0; t < 16; ++t) acc[t] += b[i + t];
      float total = 0;
      for (float a : acc) total += a;
      sums[p] += total;
    });
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (sums[0] < 0) std::printf("%f\n", sums[0]);  // keep the sums observable
  return n * sizeof(float) / best;
}

}  // namespace kvserve::bench
