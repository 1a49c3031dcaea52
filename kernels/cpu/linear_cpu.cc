// out = x · Wᵀ (+ bias) through OpenBLAS sgemm.
#include <cblas.h>

#include "kernels/cpu/cpu_ops.h"

namespace kvserve::cpu {

void Linear(Tensor x, Tensor weight, Tensor bias, Tensor out) {
  const int m = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1));
  const int n = static_cast<int>(weight.dim(0));
  if (m == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, x.as<float>(), k,
              weight.as<float>(), k, 0.f, out.as<float>(), n);
  if (!bias.empty()) {
    const float* b = bias.as<float>();
    for (int r = 0; r < m; ++r) {
      float* o = out.as<float>() + static_cast<int64_t>(r) * n;
      for (int c = 0; c < n; ++c) o[c] += b[c];
    }
  }
}

}  // namespace kvserve::cpu
