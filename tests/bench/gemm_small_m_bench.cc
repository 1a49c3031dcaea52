// Small-M products over real projection shapes (SmolLM2-135M, TinyLlama-1.1B)
// for M = 1..32: OpenBLAS sgemm and sgemv (M = 1), both split over the thread
// pool as Linear does, against the small-M kernel (kernels/cpu/gemm_small_m.h).
// Each figure is GB/s of weights read (weight bytes / time) next to a read
// ceiling measured in the same run: a vectorized sum over 1 GiB with every
// core. Weights rotate through enough copies to exceed the LLC, so every
// product streams its W from memory as a model's layers do.
//
//   gemm_small_m_bench [--rows=1,2,4,8,16,32] [--model=smollm2,tinyllama]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_small_m.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/bench/read_ceiling.h"

ABSL_FLAG(std::string, rows, "1,2,4,8,16,32", "Row counts M (1..64) to measure, comma separated.");
ABSL_FLAG(std::string, model, "smollm2,tinyllama", "Shape sets: smollm2, tinyllama.");

namespace kvserve::bench {
namespace {

using cpu::ThreadPool;
using Clock = std::chrono::steady_clock;

struct Shape {
  const char* name;
  int n, k;
};

std::vector<Shape> Shapes(const std::string& model) {
  if (model == "smollm2")
    return {{"q/o 576x576", 576, 576},     {"k/v 192x576", 192, 576},
            {"gate/up 1536x576", 1536, 576}, {"down 576x1536", 576, 1536},
            {"lm_head 49152x576", 49152, 576}};
  return {{"q/o 2048x2048", 2048, 2048},     {"k/v 256x2048", 256, 2048},
          {"gate/up 5632x2048", 5632, 2048}, {"down 2048x5632", 2048, 5632},
          {"lm_head 32000x2048", 32000, 2048}};
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Best of 5 runs of `fn` repeated `reps` times, seconds per call.
double BestSeconds(int reps, const std::function<void(int)>& fn) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto start = Clock::now();
    for (int i = 0; i < reps; ++i) fn(i);
    best = std::min(best, Seconds(Clock::now() - start) / reps);
  }
  return best;
}

// Linear's column split: a few slices per thread, multiples of 16.
void SplitColumns(int n, const std::function<void(int, int)>& fn) {
  ThreadPool& pool = ThreadPool::Shared();
  const int target = std::max(1, std::min(pool.num_threads() * 2, n / 64));
  const int slice = ((n + target - 1) / target + 15) & ~15;
  pool.ParallelFor((n + slice - 1) / slice,
                   [&](int s) { fn(s * slice, std::min(n, (s + 1) * slice)); });
}

void Run() {
  openblas_set_num_threads(1);
  std::vector<int> rows;
  for (absl::string_view r : absl::StrSplit(absl::GetFlag(FLAGS_rows), ',')) {
    int m;
    if (absl::SimpleAtoi(r, &m) && m > 0 && m <= 64) rows.push_back(m);  // x holds 64 rows
  }
  const double ceiling = ReadCeiling();
  std::printf("read ceiling (sum over 1 GiB, %d threads): %.1f GB/s; small-M ISA %s, cut-over M<=%d (bf16/q8_0: M<=%d)\n",
              ThreadPool::Shared().num_threads(), ceiling / 1e9, cpu::SmallMIsa(),
              cpu::SmallMMaxRows(), cpu::SmallMMaxRows(DType::kBFloat16));
  std::printf("GB/s of the weights' stored bytes (%% of the ceiling); bf16 and q8_0: the small-M\n"
              "kernel, and above the cut-over Linear's float32 panels for sgemm\n");
  std::printf("%-20s %3s  %16s  %16s  %16s  %16s  %16s  %16s  %16s\n", "shape", "M", "f32 sgemm",
              "f32 sgemv", "f32 small-M", "bf16 small-M", "bf16 panels", "q8_0 small-M",
              "q8_0 panels");
  for (absl::string_view model : absl::StrSplit(absl::GetFlag(FLAGS_model), ',')) {
    for (const Shape& s : Shapes(std::string(model))) {
      const size_t wsize = size_t(s.n) * s.k;
      const int copies = int(std::max<size_t>(1, (size_t(256) << 20) / (wsize * 4)));
      std::vector<float> w(wsize * copies);
      for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 17) * 0.01f - 0.08f;
      std::vector<uint8_t> w_bf16(DTypeBytes(DType::kBFloat16, int64_t(w.size())));
      std::vector<uint8_t> w_q8_0(DTypeBytes(DType::kQ8_0, int64_t(w.size())));
      (void)ConvertFromFloat32(w.data(), int64_t(w.size()), DType::kBFloat16, w_bf16.data());
      (void)ConvertFromFloat32(w.data(), int64_t(w.size()), DType::kQ8_0, w_q8_0.data());
      std::vector<float> x(size_t(64) * s.k, 0.5f), y(size_t(64) * s.n);
      const int reps = std::max(copies, 8);
      for (int m : rows) {
        auto gbps = [&](double sec) { return wsize * 4 / sec / 1e9; };
        const double sgemm = BestSeconds(reps, [&](int i) {
          const float* wi = w.data() + wsize * (i % copies);
          SplitColumns(s.n, [&](int n0, int n1) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n1 - n0, s.k, 1.f, x.data(),
                        s.k, wi + size_t(n0) * s.k, s.k, 0.f, y.data() + n0, s.n);
          });
        });
        double sgemv = 0;
        if (m == 1) {
          sgemv = BestSeconds(reps, [&](int i) {
            const float* wi = w.data() + wsize * (i % copies);
            SplitColumns(s.n, [&](int n0, int n1) {
              cblas_sgemv(CblasRowMajor, CblasNoTrans, n1 - n0, s.k, 1.f,
                          wi + size_t(n0) * s.k, s.k, x.data(), 1, 0.f, y.data() + n0, 1);
            });
          });
        }
        const double small = BestSeconds(reps, [&](int i) {
          const float* wi = w.data() + wsize * (i % copies);
          SplitColumns(s.n, [&](int n0, int n1) {
            cpu::SmallMProduct(x.data(), m, s.k, wi, DType::kFloat32, s.k, n0, n1, y.data(),
                               s.n);
          });
        });
        // The same product over bf16 and Q8_0 copies of W: the small-M kernel
        // (converting in registers) and, above the cut-over, Linear (float32
        // panels for sgemm); GB/s of the bytes stored.
        char lower[2][32], linear[2][32];
        for (int d = 0; d < 2; ++d) {
          const std::vector<uint8_t>& stored = d == 0 ? w_bf16 : w_q8_0;
          const DType dtype = d == 0 ? DType::kBFloat16 : DType::kQ8_0;
          const size_t bytes = DTypeBytes(dtype, int64_t(wsize));
          auto gbs = [&](double sec) { return bytes / sec / 1e9; };
          const double kernel = BestSeconds(reps, [&](int i) {
            const uint8_t* wi = stored.data() + bytes * (i % copies);
            SplitColumns(s.n, [&](int n0, int n1) {
              cpu::SmallMProduct(x.data(), m, s.k, wi, dtype, s.k, n0, n1, y.data(), s.n);
            });
          });
          std::snprintf(lower[d], sizeof lower[d], "%.1f (%.0f%%)", gbs(kernel),
                        100 * gbs(kernel) * 1e9 / ceiling);
          std::snprintf(linear[d], sizeof linear[d], "-");
          if (m > cpu::SmallMMaxRows(dtype)) {
            const double panels = BestSeconds(reps, [&](int i) {
              void* wi = const_cast<uint8_t*>(stored.data()) + bytes * (i % copies);
              cpu::Linear(Tensor(x.data(), DType::kFloat32, {m, s.k}), {Tensor(wi, dtype, {s.n, s.k})},
                          Tensor(), Tensor(y.data(), DType::kFloat32, {m, s.n}),
                          /*quantize_activations=*/false);
            });
            std::snprintf(linear[d], sizeof linear[d], "%.1f (%.0f%%)", gbs(panels),
                          100 * gbs(panels) * 1e9 / ceiling);
          }
        }
        char a[32], b[32] = "-", c[32];
        std::snprintf(a, sizeof a, "%.1f (%.0f%%)", gbps(sgemm), 100 * gbps(sgemm) * 1e9 / ceiling);
        if (m == 1)
          std::snprintf(b, sizeof b, "%.1f (%.0f%%)", gbps(sgemv), 100 * gbps(sgemv) * 1e9 / ceiling);
        std::snprintf(c, sizeof c, "%.1f (%.0f%%)", gbps(small), 100 * gbps(small) * 1e9 / ceiling);
        std::printf("%-20s %3d  %16s  %16s  %16s  %16s  %16s  %16s  %16s\n", s.name, m, a, b, c,
                    lower[0], linear[0], lower[1], linear[1]);
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace
}  // namespace kvserve::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  kvserve::bench::Run();
  return 0;
}
