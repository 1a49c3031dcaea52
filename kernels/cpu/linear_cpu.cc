// out = x · Wᵀ (+ bias), W given as the row blocks ("parts") it is kept in:
// column c of out belongs to the part holding row c. Each part is multiplied
// by its own method:
//   - a block format (Q8_0 ... Q6_K) with quantized activations: x is rounded
//     to int8 blocks once per call (kernels/quant/quantized_activations.h)
//     and every thread multiplies integer codes (kernels/quant/quant_product.h);
//   - bfloat16 from PackedBf16FromRows() rows of x on, on AVX-512 or AVX2:
//     the packed kernel (gemm_bf16_packed.h), W widened once per panel,
//     float32 x, exact products under either --cpu_activations;
//   - float32, bfloat16 or Q8_0 with float32 activations: up to
//     SmallMMaxRows(dtype) rows through the small-M kernel (one pass over W
//     for all rows; sgemm repacks W on every call), more through OpenBLAS
//     sgemm, over converted panels for bfloat16 and Q8_0.
// The output columns are split over the backend's thread pool (OpenBLAS
// itself runs single-threaded: one source of parallelism, no spinning BLAS
// workers competing with the pool).
//
// Above the small-M cut-over, panels of bfloat16 / Q8_0 W rows are converted
// to float32 into a per-thread buffer (PanelRows) and multiplied by sgemm:
// conversion is O(N·K) against sgemm's O(M·N·K), and Debian's OpenBLAS
// 0.3.21 has no bf16 GEMM (sbgemm).
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_bf16_packed.h"
#include "kernels/cpu/gemm_small_m.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/quant/quant_product.h"

namespace kvserve::cpu {
namespace {

// W rows converted per sgemm call: about 2 MiB of float32, a multiple of 16.
// sgemm packs all of x on every call, so a small panel repacks x often: at
// 256 KiB (32 rows of TinyLlama's k = 2048) packing x took 22% of a bf16
// prefill on Zen 3, and 2 MiB took prefill from 40 to 52 tokens/s.
int PanelRows(int k) { return std::max(16, (2048 * 1024 / (k * 4)) & ~15); }

// out[:, n0:n0+cols] = x · W[n0:n0+cols]ᵀ for W stored in a non-float32 dtype.
void ConvertedPanelsProduct(const float* x, int m, int k, Tensor weight, int n0, int cols,
                            float* out, int n) {
  thread_local std::vector<float> panel;
  const int rows = PanelRows(k);
  panel.resize(size_t(rows) * k);
  for (int r0 = 0; r0 < cols; r0 += rows) {
    const int r = std::min(rows, cols - r0);
    const Tensor part = weight.Rows(n0 + r0, r);
    (void)ConvertToFloat32(part.data, part.dtype, part.numel(), panel.data());  // checked dtypes
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, r, k, 1.f, x, k, panel.data(), k, 0.f,
                out + n0 + r0, n);
  }
}

// Whether a part is multiplied through quantized activations.
bool Quantized(DType dtype, bool quantize_activations) {
  return IsBlockDType(dtype) && (quantize_activations || dtype != DType::kQ8_0);
}

// fn(row_begin, row_end) over the m rows of x in a few chunks per pool
// thread (rounding activations: O(M·K), independent rows).
template <typename F>
void ForRowChunks(int m, const F& fn) {
  ThreadPool& pool = ThreadPool::Shared();
  const int chunks = std::min(m, pool.num_threads() * 4);
  pool.ParallelFor(chunks, [&](int c) { fn(c * m / chunks, (c + 1) * m / chunks); });
}

// x rounded for one block format: ggml's Q8_0 blocks for the 32-element
// formats, Q8_K for the K-quants.
void Round(DType dtype, Tensor x, QuantizedActivations* a) {
  const int m = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  ResizeQuantizedActivations(dtype, m, k, a);
  ForRowChunks(m, [&](int begin, int end) { QuantizeActivationRows(x.as<float>(), k, begin, end, a); });
}

// Whether a part of m rows of x runs the packed bf16 kernel.
bool PackedBf16Serves(DType dtype, int m) {
  return dtype == DType::kBFloat16 && PackedBf16Supported() && m >= PackedBf16FromRows();
}

}  // namespace

void Linear(Tensor x, const std::vector<Tensor>& parts, Tensor bias, Tensor out,
            bool quantize_activations) {
  const int m = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(out.dim(1));
  if (m == 0) return;
  // Each part's first output column, and x rounded for its format, once per
  // format (parts of one format share it; Q4_K and Q6_K parts do not: their
  // code offsets differ). The buffers are kept by the calling thread (the
  // engine's) from call to call.
  thread_local std::vector<QuantizedActivations> storage;
  std::vector<int> first(parts.size() + 1, 0);
  std::vector<const QuantizedActivations*> rounded(parts.size(), nullptr);
  size_t used = 0;
  storage.reserve(std::max(storage.size(), parts.size()));  // no reallocation below
  for (size_t p = 0; p < parts.size(); ++p) {
    first[p + 1] = first[p] + static_cast<int>(parts[p].dim(0));
    if (!Quantized(parts[p].dtype, quantize_activations)) continue;
    for (size_t u = 0; u < used && rounded[p] == nullptr; ++u) {
      if (storage[u].weight_dtype == parts[p].dtype) rounded[p] = &storage[u];
    }
    if (rounded[p] != nullptr) continue;
    if (storage.size() <= used) storage.resize(used + 1);
    Round(parts[p].dtype, x, &storage[used]);
    rounded[p] = &storage[used++];
  }
  ThreadPool& pool = ThreadPool::Shared();
  // Column slices: a few per thread for balance, multiples of 16 (SIMD and
  // cache-line friendly), none smaller than 64 columns. Up to 8 rows, 8 per
  // thread: with 2, the caller waited for the other thread's last slice for
  // ~15% of its time at batch 1 (perf), and 8 measured +2-16% at batches 1
  // and 8 on Zen 3 (docs/cpu_threading.md). Above, 2: each slice of a bf16
  // product reorders (AVX2) or packs (AVX-512) all of x, and 8 per thread
  // measured 5-9% slower at batch 32.
  const int per_thread = m <= 8 ? 8 : 2;
  const int target = std::max(1, std::min(pool.num_threads() * per_thread, n / 64));
  const int slice = ((n + target - 1) / target + 15) & ~15;
  const int slices = (n + slice - 1) / slice;
  pool.ParallelFor(slices, [&](int s) {
    const int c0 = s * slice, c1 = std::min(n, c0 + slice);
    for (size_t p = 0; p < parts.size(); ++p) {
      const int begin = std::max(c0, first[p]), end = std::min(c1, first[p + 1]);
      if (begin >= end) continue;
      const Tensor& w = parts[p];
      const int n0 = begin - first[p], cols = end - begin;  // rows of this part
      float* part_out = out.as<float>() + first[p];          // its column 0
      if (rounded[p] != nullptr) {
        QuantProduct(*rounded[p], w.data, n0, n0 + cols, part_out, n);
      } else if (PackedBf16Serves(w.dtype, m)) {
        PackedBf16Product(x.as<float>(), m, k, w.as<uint16_t>(), k, n0, n0 + cols, part_out, n);
      } else if (m <= SmallMMaxRows(w.dtype)) {
        SmallMProduct(x.as<float>(), m, k, w.data, w.dtype, k, n0, n0 + cols, part_out, n);
      } else if (w.dtype == DType::kFloat32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, cols, k, 1.f, x.as<float>(), k,
                    w.as<float>() + int64_t(n0) * k, k, 0.f, part_out + n0, n);
      } else {
        ConvertedPanelsProduct(x.as<float>(), m, k, w, n0, cols, part_out, n);
      }
    }
    if (!bias.empty()) {
      const float* b = bias.as<float>();
      for (int r = 0; r < m; ++r) {
        float* row = out.as<float>() + int64_t(r) * n;
        for (int c = c0; c < c1; ++c) row[c] += b[c];
      }
    }
  });
}

}  // namespace kvserve::cpu
