// The quantized product (kernels/quant/) on one thread for each block format
// at TinyLlama's gate/up and down shapes: weight GB/s and integer GMAC/s at
// several row counts, with every instruction set this CPU runs. A tool for
// tuning the kernels; the end-to-end numbers against llama.cpp come from
// deploy/cpu-peer-bench.sh.
//
// With --evict, 64 MiB are read before each timed run, so W comes from DRAM
// as in a decode step (otherwise TinyLlama's shapes, 3-25 MiB, sit in L3);
// --threads splits W's rows over that many threads, as the backend does.
//
//   kvserve-quant-product-bench [--rows 1,8,32,128] [--formats q4_0,q4_k,...] [--isa NAME]
//                               [--evict] [--threads 1]
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "kernels/quant/quant_product.h"
#include "tests/quant_test_util.h"

ABSL_FLAG(std::string, rows, "1,8,32,128", "Rows of x (comma separated).");
ABSL_FLAG(std::string, formats, "q8_0,q4_0,q4_1,q5_0,q5_1,q4_k,q5_k,q6_k", "Block formats.");
ABSL_FLAG(std::string, isa, "", "Instruction set (default: every one this CPU runs).");
ABSL_FLAG(bool, evict, false, "Read 64 MiB before each timed run (W from DRAM, not L3).");
ABSL_FLAG(int, threads, 1, "Threads sharing W's rows.");

namespace kvserve {
namespace {

double BestSeconds(int reps, const std::function<void()>& f) {
  static std::vector<uint8_t> evict(absl::GetFlag(FLAGS_evict) ? size_t(64) << 20 : 0, 1);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    uint64_t sink = 0;
    for (size_t b = 0; b < evict.size(); b += 64) sink += evict[b];
    if (sink == 1) std::printf(" ");  // keeps the reads
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace kvserve;
  std::vector<int> rows;
  for (absl::string_view r : absl::StrSplit(absl::GetFlag(FLAGS_rows), ',')) {
    int v;
    if (absl::SimpleAtoi(r, &v)) rows.push_back(v);
  }
  std::vector<std::string> isas = QuantProductRunnableIsas();
  if (!absl::GetFlag(FLAGS_isa).empty()) isas = {absl::GetFlag(FLAGS_isa)};
  std::mt19937 rng(1);
  struct Shape { const char* name; int n, k; };
  const Shape shapes[] = {{"gate_up", 11264, 2048}, {"down", 2048, 5632}};
  std::printf("%-6s %-8s %-11s %5s %10s %10s\n", "format", "shape", "isa", "rows", "GB/s W", "GMAC/s");
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_formats), ',')) {
    DType dtype{};
    bool found = false;
    for (DType d : testing::kBlockFormats) {
      if (DTypeName(d) == name) dtype = d, found = true;
    }
    if (!found) continue;
    for (const Shape& s : shapes) {
      if (s.k % DTypeBlockElems(dtype) != 0) continue;
      const std::vector<uint8_t> w = testing::RandomBlocks(dtype, s.n, s.k, rng);
      for (int m : rows) {
        std::vector<float> x(size_t(m) * s.k);
        std::normal_distribution<float> normal;
        for (float& v : x) v = normal(rng);
        QuantizedActivations a;
        ResizeQuantizedActivations(dtype, m, s.k, &a);
        QuantizeActivationRows(x.data(), s.k, 0, m, &a);
        std::vector<float> y(size_t(m) * s.n);
        for (const std::string& isa : isas) {
          const int reps = m >= 128 ? 2 : 4;
          const int threads = std::max(1, absl::GetFlag(FLAGS_threads));
          const double sec = BestSeconds(reps, [&] {
            std::vector<std::thread> pool;
            for (int t = 0; t < threads; ++t) {
              pool.emplace_back([&, t] {
                const int begin = (s.n * t / threads) & ~15, end = t + 1 == threads ? s.n : (s.n * (t + 1) / threads) & ~15;
                QuantProductWithIsa(isa, a, w.data(), begin, end, y.data(), s.n);
              });
            }
            for (std::thread& th : pool) th.join();
          });
          std::printf("%-6s %-8s %-11s %5d %10.2f %10.1f\n", std::string(name).c_str(), s.name,
                      isa.c_str(), m, w.size() / sec * 1e-9, double(m) * s.n * s.k / sec * 1e-9);
        }
      }
    }
  }
  return 0;
}
