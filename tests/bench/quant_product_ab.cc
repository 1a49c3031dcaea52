// Two builds of kernels/quant/quant_product.cc in one process, run
// alternately on the same product: the median of the per-round time ratios
// decides, not two runs minutes apart. Made by tools/quant-product-ab.sh,
// which compiles a git revision's quant_product.cc as A and the working
// tree's as B (their entry points renamed by -D, everything else in them has
// internal linkage). Why: the build VMs' speed drifts by 20-40% (at times
// 2×) over minutes, so separate runs could not see a 10% change; rounds of a
// few milliseconds each, interleaved, can (the same build against itself
// measures 1.00 ± 0.03).
//
//   quant-product-ab FORMAT N K M [ROUNDS] [THREADS] [ISA]
//   e.g. q4_0 64 2048 1 300 (W in L2), q4_0 200000 2048 1 10 2 (W from DRAM)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/quant/quant_product.h"
#include "tests/quant_test_util.h"

namespace kvserve {
void QuantProductWithIsaA(absl::string_view, const QuantizedActivations&, const void*, int, int,
                          float*, int64_t);
void QuantProductWithIsaB(absl::string_view, const QuantizedActivations&, const void*, int, int,
                          float*, int64_t);
}  // namespace kvserve

using namespace kvserve;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s FORMAT N K M [ROUNDS] [THREADS] [ISA]\n", argv[0]);
    return 2;
  }
  const std::string format = argv[1];
  const int n = std::atoi(argv[2]), k = std::atoi(argv[3]), m = std::atoi(argv[4]);
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 300;
  const int threads = argc > 6 ? std::max(1, std::atoi(argv[6])) : 1;
  const std::string isa = argc > 7 ? argv[7] : QuantProductIsa();
  DType dtype{};
  bool found = false;
  for (DType d : testing::kBlockFormats) {
    if (DTypeName(d) == format) dtype = d, found = true;
  }
  if (!found || n <= 0 || m <= 0 || k <= 0 || k % DTypeBlockElems(dtype) != 0) {
    std::fprintf(stderr, "bad FORMAT, N, K or M (K a multiple of the block)\n");
    return 2;
  }
  std::mt19937 rng(1);
  const std::vector<uint8_t> w = testing::RandomBlocks(dtype, n, k, rng);
  std::vector<float> x(size_t(m) * k);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  QuantizedActivations a;
  ResizeQuantizedActivations(dtype, m, k, &a);
  QuantizeActivationRows(x.data(), k, 0, m, &a);
  std::vector<float> ya(size_t(m) * n), yb(size_t(m) * n);
  // About 2 MiB of W per timed piece: a few milliseconds.
  const int calls = static_cast<int>(std::max<size_t>(1, (size_t(2) << 20) / w.size()));
  auto seconds = [&](auto product, float* y) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) {
      if (threads == 1) {
        product(isa, a, w.data(), 0, n, y, n);
        continue;
      }
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          const int begin = (n * t / threads) & ~15;
          const int end = t + 1 == threads ? n : (n * (t + 1) / threads) & ~15;
          product(isa, a, w.data(), begin, end, y, n);
        });
      }
      for (std::thread& th : pool) th.join();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
  };
  std::vector<double> ta, tb, ratio;
  for (int r = 0; r < rounds; ++r) {
    ta.push_back(seconds(QuantProductWithIsaA, ya.data()));
    tb.push_back(seconds(QuantProductWithIsaB, yb.data()));
    ratio.push_back(ta.back() / tb.back());
  }
  double max_rel = 0;
  for (size_t i = 0; i < ya.size(); ++i) {
    max_rel = std::max(max_rel, double(std::fabs(ya[i] - yb[i])) / (std::fabs(ya[i]) + 1e-3));
  }
  const double gmac = double(m) * n * k * 1e-9;
  std::printf(
      "%s %s n=%d k=%d m=%d threads=%d: A %.1f GMAC/s (%.1f GB/s of W), B %.1f GMAC/s; "
      "B/A speed, median of %d rounds: %.3f; outputs differ by %.2g relative at most\n",
      format.c_str(), isa.c_str(), n, k, m, threads, gmac / Median(ta),
      w.size() / Median(ta) * 1e-9, gmac / Median(tb), rounds, Median(ratio), max_rel);
  return 0;
}
