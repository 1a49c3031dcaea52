// Every row-wise CUDA op against the CPU reference, in float32, bfloat16 and
// float16: fresh random inputs (never zeros) rounded to the dtype so both
// backends see the same values, outputs poisoned with NaN before each run,
// ‖gpu − cpu‖ / ‖cpu‖ within the stated tolerance (float32 1e-4, bfloat16
// 1e-2, float16 5e-3), no NaN anywhere. Bad ids come back from the next
// synchronization as the CPU backend's OutOfRange error, and the backend
// keeps working afterwards.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm_skinny_mma.h"
#include "kernels/cuda/gemv_small_m.h"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/quant/dequantize.h"
#include "tests/cuda_test_util.h"
#include "tests/quant_test_util.h"

namespace kvserve::testing {
namespace {

class CudaOpsTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::DescribeDevice();
    gpu_ = NewCudaBackend(GetParam());
    ASSERT_NE(gpu_, nullptr);
    reference_gpu_ = NewCudaBackend(GetParam(), /*graphs=*/false, /*fast_kernels=*/false);
    ASSERT_NE(reference_gpu_, nullptr);
  }

  /// The backend with the fast kernels (the default) and the one with only
  /// their references: both must match the CPU.
  std::vector<std::pair<std::string, cuda::CudaBackend*>> Backends() {
    return {{"fast kernels", gpu_.get()}, {"reference kernels", reference_gpu_.get()}};
  }

  void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                   const std::string& what) {
    ASSERT_FALSE(AnyNonFinite(got)) << what << ": NaN or inf in the GPU output";
    const double err = RelativeError(got, want);
    EXPECT_LE(err, Tolerance(GetParam())) << what << ": relative error " << err;
  }

  DType dtype() const { return GetParam(); }

  /// x [rows, k] · w [n, k]ᵀ on the CPU, plus `bias` [n] when given.
  std::vector<float> CpuLinear(std::vector<float>& x, std::vector<float>& w,
                               const std::vector<float>* bias, int64_t rows, int64_t n,
                               int64_t k) {
    std::vector<float> want(rows * n);
    EXPECT_TRUE(cpu_.Linear(HostTensor(x, {rows, k}), HostTensor(w, {n, k}), Tensor(),
                            HostTensor(want, {rows, n}))
                    .ok());
    if (bias != nullptr) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < n; ++c) want[r * n + c] += (*bias)[c];
      }
    }
    return want;
  }

  /// A random x [rows, k] · w [n, k]ᵀ (+ bias [n]) on the device, the output
  /// in `out_dtype`, and the CPU's answer: what every GEMV / GEMM kernel test
  /// starts from.
  struct LinearProblem {
    LinearProblem(cuda::CudaBackend& gpu, DType dtype, DType out_dtype, int64_t rows, int64_t n,
                  int64_t k)
        : x(gpu, dtype, {rows, k}), w(gpu, dtype, {n, k}), bias(gpu, out_dtype, {n}),
          out(gpu, out_dtype, {rows, n}) {}
    DeviceTensor x, w, bias, out;
    Tensor bias_or_none;  // `bias`, or no tensor when the problem has none
    std::vector<float> want;
  };
  std::unique_ptr<LinearProblem> RandomLinear(int64_t rows, int64_t n, int64_t k, bool with_bias,
                                              DType out_dtype) {
    auto p = std::make_unique<LinearProblem>(*gpu_, dtype(), out_dtype, rows, n, k);
    std::vector<float> x = RandomValues(rng_, rows * k, dtype());
    std::vector<float> w = RandomValues(rng_, n * k, dtype(), 0.05f);
    std::vector<float> bias = RandomValues(rng_, n, out_dtype);
    p->want = CpuLinear(x, w, with_bias ? &bias : nullptr, rows, n, k);
    p->x.Set(x);
    p->w.Set(w);
    p->bias.Set(bias);
    p->bias_or_none = with_bias ? p->bias.tensor() : Tensor();
    return p;
  }

  std::mt19937 rng_{1234};
  CpuBackend cpu_;
  std::unique_ptr<cuda::CudaBackend> gpu_;
  std::unique_ptr<cuda::CudaBackend> reference_gpu_;
};

// A GGUF file's block-format weights are dequantized on upload, a staging
// slot at a time (docs/quantized_weights.md): the device holds exactly the
// host dequantization rounded to the compute dtype. Sizes past one slot.
TEST_P(CudaOpsTest, GgufBlockFormatsDequantizeOnUpload) {
  for (DType format : kBlockFormats) {
    SCOPED_TRACE(std::string(DTypeName(format)));
    const int64_t rows = 3000, k = 512;  // 1.5 M weights: several staging slots
    const std::vector<uint8_t> blocks = RandomBlocks(format, rows, k, rng_);
    std::vector<float> want(rows * k);
    DequantizeBlocks(format, blocks.data(), rows * k / DTypeBlockElems(format), want.data());
    std::vector<uint16_t> rounded(want.size());
    if (dtype() != DType::kFloat32) {
      ASSERT_TRUE(ConvertFromFloat32(want.data(), want.size(), dtype(), rounded.data()).ok());
      ASSERT_TRUE(ConvertToFloat32(rounded.data(), dtype(), want.size(), want.data()).ok());
    }
    DeviceTensor d(*gpu_, dtype(), {rows, k});
    ASSERT_TRUE(gpu_->Upload(blocks.data(), format, d).ok());
    EXPECT_EQ(d.Get(), want);
  }
}

TEST_P(CudaOpsTest, EmbeddingAndGatherRows) {
  for (int64_t hidden : {256, 100, 2048}) {  // 100 bf16 values: rows not 16-byte multiples
    SCOPED_TRACE("hidden " + std::to_string(hidden));
    const int64_t vocab = 1000, tokens = 37;
    std::vector<float> table = RandomValues(rng_, vocab * hidden, dtype());
    std::vector<int32_t> ids(tokens);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng_() % vocab);
    ids[0] = 0;
    ids[1] = static_cast<int32_t>(vocab - 1);
    std::vector<float> want(tokens * hidden);
    ASSERT_TRUE(cpu_.Embedding(HostInts(ids, {tokens}), HostTensor(table, {vocab, hidden}),
                               HostTensor(want, {tokens, hidden}))
                    .ok());
    DeviceTensor d_table(*gpu_, dtype(), {vocab, hidden}), d_ids(*gpu_, DType::kInt32, {tokens});
    DeviceTensor d_out(*gpu_, dtype(), {tokens, hidden});
    d_table.Set(table);
    d_ids.SetInts(ids);
    ASSERT_TRUE(gpu_->Embedding(d_ids, d_table, d_out).ok());
    ExpectClose(d_out.Get(), want, "Embedding");

    std::vector<int32_t> rows = {5, 0, 36, 5, 17};
    const int64_t s = rows.size();
    std::vector<float> gathered(s * hidden);
    ASSERT_TRUE(cpu_.GatherRows(HostTensor(want, {tokens, hidden}), HostInts(rows, {s}),
                                HostTensor(gathered, {s, hidden}))
                    .ok());
    DeviceTensor d_rows(*gpu_, DType::kInt32, {s}), d_gathered(*gpu_, dtype(), {s, hidden});
    d_rows.SetInts(rows);
    ASSERT_TRUE(gpu_->GatherRows(d_out, d_rows, d_gathered).ok());
    ExpectClose(d_gathered.Get(), gathered, "GatherRows");
  }
}

TEST_P(CudaOpsTest, RmsNormAndFusedResidualAdd) {
  // 8192: four 16-byte vectors per thread in 16-bit dtypes; 12288 float32:
  // too wide for the one-pass kernel (the reference serves); 1000 float32 and
  // 100: rows that are (not) whole vectors.
  for (int64_t hidden : {64, 100, 1000, 2048, 8192, 12288}) {
    SCOPED_TRACE("hidden " + std::to_string(hidden));
    const int64_t rows = 7;
    std::vector<float> x = RandomValues(rng_, rows * hidden, dtype(), 2.f);
    std::vector<float> residual = RandomValues(rng_, rows * hidden, dtype(), 2.f);
    std::vector<float> weight = RandomValues(rng_, hidden, dtype());
    std::vector<float> want(rows * hidden), want_fused(rows * hidden), want_residual = residual;
    ASSERT_TRUE(cpu_.RmsNorm(HostTensor(x, {rows, hidden}), HostTensor(weight, {hidden}), 1e-5f,
                             HostTensor(want, {rows, hidden}))
                    .ok());
    ASSERT_TRUE(cpu_.AddRmsNorm(HostTensor(want_residual, {rows, hidden}),
                                HostTensor(x, {rows, hidden}), HostTensor(weight, {hidden}), 1e-5f,
                                HostTensor(want_fused, {rows, hidden}))
                    .ok());
    for (auto [name, gpu] : Backends()) {
      SCOPED_TRACE(name);
      DeviceTensor d_x(*gpu, dtype(), {rows, hidden}), d_w(*gpu, dtype(), {hidden});
      DeviceTensor d_res(*gpu, dtype(), {rows, hidden}), d_out(*gpu, dtype(), {rows, hidden});
      d_x.Set(x);
      d_w.Set(weight);
      ASSERT_TRUE(gpu->RmsNorm(d_x, d_w, 1e-5f, d_out).ok());
      ExpectClose(d_out.Get(), want, "RmsNorm");
      d_res.Set(residual);
      d_out.Poison();
      ASSERT_TRUE(gpu->AddRmsNorm(d_res, d_x, d_w, 1e-5f, d_out).ok());
      ExpectClose(d_out.Get(), want_fused, "AddRmsNorm output");
      ExpectClose(d_res.Get(), want_residual, "AddRmsNorm residual");
    }
  }
}

TEST_P(CudaOpsTest, LinearWithAndWithoutBiasInBothOutputDtypes) {
  struct Shape {
    int64_t rows, n, k;
  };
  // 1 and 7 rows: decode steps; 300: a prefill chunk; k = 172: rows that are
  // not 16-byte multiples in 16-bit dtypes (the cublasGemmEx fallback).
  for (const Shape& s : {Shape{1, 64, 64}, Shape{7, 1000, 512}, Shape{300, 384, 256},
                         Shape{33, 256, 172}, Shape{5, 344, 64}}) {
    for (bool with_bias : {false, true}) {
      for (DType out_dtype : {dtype(), DType::kFloat32}) {
        const std::string what = "Linear [" + std::to_string(s.rows) + ", " + std::to_string(s.k) +
                                 "] x [" + std::to_string(s.n) + "]" + (with_bias ? " + bias" : "") +
                                 " -> " + std::string(DTypeName(out_dtype));
        SCOPED_TRACE(what);
        std::vector<float> x = RandomValues(rng_, s.rows * s.k, dtype());
        std::vector<float> w = RandomValues(rng_, s.n * s.k, dtype(), 0.1f);
        std::vector<float> bias = RandomValues(rng_, s.n, dtype());
        std::vector<float> want(s.rows * s.n);
        ASSERT_TRUE(cpu_.Linear(HostTensor(x, {s.rows, s.k}), HostTensor(w, {s.n, s.k}),
                                with_bias ? HostTensor(bias, {s.n}) : Tensor(),
                                HostTensor(want, {s.rows, s.n}))
                        .ok());
        DeviceTensor d_x(*gpu_, dtype(), {s.rows, s.k}), d_w(*gpu_, dtype(), {s.n, s.k});
        DeviceTensor d_b(*gpu_, dtype(), {s.n}), d_out(*gpu_, out_dtype, {s.rows, s.n});
        d_x.Set(x);
        d_w.Set(w);
        d_b.Set(bias);
        absl::Status st = gpu_->Linear(d_x, d_w, with_bias ? d_b.tensor() : Tensor(), d_out);
        ASSERT_TRUE(st.ok()) << st;
        ExpectClose(d_out.Get(), want, what);
      }
    }
  }
}

// The small-M kernel that GEMM tuning may pick for decode buckets (it is
// only ever chosen after agreeing with cuBLASLt on the GPU; this checks it
// against the CPU on every row count it takes, with and without bias, in
// both output dtypes, on widths that are and are not multiples of its
// 256-element chunks and row counts that leave a warp's second row empty).
TEST_P(CudaOpsTest, SmallMGemvMatchesTheCpu) {
  if (dtype() == DType::kFloat32) {  // bf16/f16 only: float32 products stay with cuBLASLt
    DeviceTensor x(*gpu_, dtype(), {1, 64}), w(*gpu_, dtype(), {8, 64}), out(*gpu_, dtype(), {1, 8});
    EXPECT_FALSE(cuda::GemvSmallMServes(x, w, Tensor(), out));
    DeviceTensor gate_up(*gpu_, dtype(), {1, 128});
    EXPECT_FALSE(cuda::GemvSiluMulServes(gate_up, w, Tensor(), out));
    return;
  }
  struct Shape {
    int64_t n, k;
  };
  // K = 2056: two vectors per step at M ≤ 2, the second past K for most threads.
  for (const Shape& s : {Shape{1, 64}, Shape{7, 2048}, Shape{301, 520}, Shape{64, 4096},
                         Shape{33, 2056}}) {
    for (int64_t rows = 1; rows <= cuda::kGemvMaxRows; ++rows) {
      for (bool with_bias : {false, true}) {
        for (DType out_dtype : {dtype(), DType::kFloat32}) {
          SCOPED_TRACE(::testing::Message() << "[" << rows << ", " << s.k << "] x [" << s.n
                                            << ", " << s.k << "]ᵀ, bias " << with_bias << ", out "
                                            << DTypeName(out_dtype));
          const auto p = RandomLinear(rows, s.n, s.k, with_bias, out_dtype);
          ASSERT_TRUE(cuda::GemvSmallMServes(p->x, p->w, p->bias_or_none, p->out));
          ASSERT_TRUE(
              cuda::LaunchGemvSmallM(p->x, p->w, p->bias_or_none, p->out, gpu_->stream()).ok());
          ExpectClose(p->out.Get(), p->want, "GemvSmallM");
        }
      }
    }
  }
  // What it refuses: nine rows, float32, a width that is not whole vectors.
  DeviceTensor x9(*gpu_, dtype(), {9, 64}), w(*gpu_, dtype(), {8, 64}), out9(*gpu_, dtype(), {9, 8});
  EXPECT_FALSE(cuda::GemvSmallMServes(x9, w, Tensor(), out9));
  DeviceTensor x12(*gpu_, dtype(), {1, 12}), w12(*gpu_, dtype(), {8, 12}), out1(*gpu_, dtype(), {1, 8});
  EXPECT_FALSE(cuda::GemvSmallMServes(x12, w12, Tensor(), out1));
}

// The skinny tensor-core kernel GEMM tuning may pick for 9-64 rows, against
// the CPU: every row count of each tile width it launches (ragged ones
// included), both CTA heights, with and without bias, both output dtypes,
// and W heights that leave a CTA's last rows empty.
TEST_P(CudaOpsTest, SkinnyMmaMatchesTheCpu) {
  if (dtype() == DType::kFloat32) {  // bf16/f16 only
    DeviceTensor x(*gpu_, dtype(), {16, 64}), w(*gpu_, dtype(), {8, 64}), out(*gpu_, dtype(), {16, 8});
    EXPECT_FALSE(cuda::SkinnyMmaServes(x, w, Tensor(), out, 16));
    return;
  }
  struct Shape {
    int64_t n, k;
  };
  for (const Shape& s : {Shape{16, 32}, Shape{77, 2048}, Shape{300, 544}, Shape{64, 8192}}) {
    for (int64_t rows : {1, 8, 9, 13, 16, 17, 31, 32, 33, 50, 64}) {
      for (int rows_per_cta : {16, 32}) {
        if (rows_per_cta == 32 && rows > 32) continue;
        for (bool with_bias : {false, true}) {
          for (DType out_dtype : {dtype(), DType::kFloat32}) {
            SCOPED_TRACE(::testing::Message()
                         << "[" << rows << ", " << s.k << "] x [" << s.n << ", " << s.k
                         << "]ᵀ, " << rows_per_cta << " rows per CTA, bias " << with_bias
                         << ", out " << DTypeName(out_dtype));
            const auto p = RandomLinear(rows, s.n, s.k, with_bias, out_dtype);
            p->out.Set(std::vector<float>(rows * s.n, std::nanf("")));  // every output written
            ASSERT_TRUE(cuda::SkinnyMmaServes(p->x, p->w, p->bias_or_none, p->out, rows_per_cta));
            ASSERT_TRUE(cuda::LaunchSkinnyMma(p->x, p->w, p->bias_or_none, p->out, rows_per_cta,
                                              gpu_->stream())
                            .ok());
            ExpectClose(p->out.Get(), p->want, "SkinnyMma");
          }
        }
      }
    }
  }
  // What it refuses: 65 rows (33 at 32 rows per CTA), K not a multiple of 32.
  DeviceTensor x65(*gpu_, dtype(), {65, 64}), w(*gpu_, dtype(), {8, 64}), out65(*gpu_, dtype(), {65, 8});
  EXPECT_FALSE(cuda::SkinnyMmaServes(x65, w, Tensor(), out65, 16));
  DeviceTensor x33(*gpu_, dtype(), {33, 64}), out33(*gpu_, dtype(), {33, 8});
  EXPECT_FALSE(cuda::SkinnyMmaServes(x33, w, Tensor(), out33, 32));
  EXPECT_TRUE(cuda::SkinnyMmaServes(x33, w, Tensor(), out33, 16));
  DeviceTensor x48(*gpu_, dtype(), {16, 48}), w48(*gpu_, dtype(), {8, 48}), out16(*gpu_, dtype(), {16, 8});
  EXPECT_FALSE(cuda::SkinnyMmaServes(x48, w48, Tensor(), out16, 16));
}

// The pre-norm variant of the GEMV: residual (+= delta) and RMSNorm
// computed by every CTA, the residual written back by the last, against the
// CPU's AddRmsNorm (or RmsNorm) then Linear; twice in a row, so that a
// counter left non-zero by the first launch shows in the second.
TEST_P(CudaOpsTest, RmsNormGemvMatchesTheCpu) {
  if (dtype() == DType::kFloat32) return;  // bf16/f16 only, as the plain GEMV
  const float eps = 1e-5f;
  for (int64_t k : {64, 2048, 2056, 4096}) {
    for (int64_t rows = 1; rows <= cuda::kGemvRmsNormMaxRows; ++rows) {
      if (rows * k > cuda::kGemvRmsNormMaxElems) continue;
      for (bool add : {false, true}) {
        const int64_t n = 300;
        SCOPED_TRACE(::testing::Message() << (add ? "add + " : "") << "RMSNorm of [" << rows << ", "
                                          << k << "] x [" << n << ", " << k << "]ᵀ");
        std::vector<float> residual = RandomValues(rng_, rows * k, dtype(), 3.f);
        std::vector<float> delta = RandomValues(rng_, rows * k, dtype());
        std::vector<float> norm_w = RandomValues(rng_, k, dtype());
        std::vector<float> w = RandomValues(rng_, n * k, dtype(), 0.05f);
        std::vector<float> want_residual = residual, normed(rows * k), want(rows * n);
        if (add) {
          ASSERT_TRUE(cpu_.AddRmsNorm(HostTensor(want_residual, {rows, k}), HostTensor(delta, {rows, k}),
                                      HostTensor(norm_w, {k}), eps, HostTensor(normed, {rows, k}))
                          .ok());
          want_residual = RoundTo(dtype(), want_residual);
        } else {
          ASSERT_TRUE(cpu_.RmsNorm(HostTensor(residual, {rows, k}), HostTensor(norm_w, {k}), eps,
                                   HostTensor(normed, {rows, k}))
                          .ok());
        }
        normed = RoundTo(dtype(), normed);
        ASSERT_TRUE(cpu_.Linear(HostTensor(normed, {rows, k}), HostTensor(w, {n, k}), Tensor(),
                                HostTensor(want, {rows, n}))
                        .ok());
        DeviceTensor d_residual(*gpu_, dtype(), {rows, k}), d_delta(*gpu_, dtype(), {rows, k});
        DeviceTensor d_norm_w(*gpu_, dtype(), {k}), d_w(*gpu_, dtype(), {n, k});
        DeviceTensor d_out(*gpu_, dtype(), {rows, n});
        DeviceTensor counter(*gpu_, DType::kInt32, {1});
        counter.SetInts({0});
        d_delta.Set(delta);
        d_norm_w.Set(norm_w);
        d_w.Set(w);
        for (int round = 0; round < 2; ++round) {
          d_residual.Set(residual);
          d_out.Set(std::vector<float>(rows * n, std::nanf("")));
          const Tensor d = add ? d_delta.tensor() : Tensor();
          ASSERT_TRUE(cuda::GemvRmsNormServes(d_residual, d, d_norm_w, d_w, Tensor(), d_out));
          ASSERT_TRUE(cuda::LaunchGemvRmsNorm(d_residual, d, d_norm_w, eps,
                                              static_cast<int*>(counter.tensor().data), d_w,
                                              Tensor(), d_out, gpu_->stream())
                          .ok());
          ExpectClose(d_out.Get(), want, "GemvRmsNorm");
          ExpectClose(d_residual.Get(), add ? want_residual : residual, "residual");
          EXPECT_EQ(counter.GetInts(), std::vector<int32_t>{0});
        }
      }
    }
  }
  // Through the backend as the model calls it. No Warmup has tuned this
  // backend's plans, so this is the unfused path (norm or SiLU·mul, then
  // Linear); the fused one serves where tuning picks the GEMV, which
  // cuda_engine_test's decode steps exercise.
  const int64_t rows = 2, k = 512, n = 96;
  std::vector<float> residual = RandomValues(rng_, rows * k, dtype(), 3.f);
  std::vector<float> delta = RandomValues(rng_, rows * k, dtype());
  std::vector<float> norm_w = RandomValues(rng_, k, dtype());
  std::vector<float> w = RandomValues(rng_, n * k, dtype(), 0.05f);
  std::vector<float> want_residual = residual, normed(rows * k), want(rows * n);
  ASSERT_TRUE(cpu_.AddRmsNorm(HostTensor(want_residual, {rows, k}), HostTensor(delta, {rows, k}),
                              HostTensor(norm_w, {k}), eps, HostTensor(normed, {rows, k}))
                  .ok());
  normed = RoundTo(dtype(), normed);
  ASSERT_TRUE(cpu_.Linear(HostTensor(normed, {rows, k}), HostTensor(w, {n, k}), Tensor(),
                          HostTensor(want, {rows, n}))
                  .ok());
  DeviceTensor d_residual(*gpu_, dtype(), {rows, k}), d_delta(*gpu_, dtype(), {rows, k});
  DeviceTensor d_norm_w(*gpu_, dtype(), {k}), d_normed(*gpu_, dtype(), {rows, k});
  DeviceTensor d_w(*gpu_, dtype(), {n, k}), d_out(*gpu_, dtype(), {rows, n});
  d_residual.Set(residual);
  d_delta.Set(delta);
  d_norm_w.Set(norm_w);
  d_w.Set(w);
  ASSERT_TRUE(gpu_->AddRmsNormLinear(d_residual, d_delta, d_norm_w, eps, d_normed,
                                     {d_w.tensor()}, Tensor(), d_out)
                  .ok());
  ExpectClose(d_out.Get(), want, "AddRmsNormLinear");
  ExpectClose(d_residual.Get(), RoundTo(dtype(), want_residual), "AddRmsNormLinear residual");
}

// The GEMV is launched to overlap the kernel before it (pdl.cuh): it may
// load weights early but must read x only once that kernel has finished.
// Here x starts as NaN and is written by a one-pass RMSNorm queued behind a
// 200 µs spin; a GEMV reading x before the norm's writes were visible would
// give NaN or the wrong rows.
TEST_P(CudaOpsTest, SmallMGemvWaitsForTheKernelBeforeIt) {
  if (dtype() == DType::kFloat32) return;  // the GEMV takes bf16/f16 only
  // 2 rows at K = 4096: the kernel that loads two vectors per step early.
  for (const auto& [rows, k] : {std::pair<int64_t, int64_t>{3, 2048}, {2, 4096}}) {
    SCOPED_TRACE(::testing::Message() << rows << " rows, K = " << k);
    const int64_t n = 1000;
    std::vector<float> h = RandomValues(rng_, rows * k, dtype(), 2.f);
    std::vector<float> norm_w = RandomValues(rng_, k, dtype());
    std::vector<float> w = RandomValues(rng_, n * k, dtype(), 0.05f);
    std::vector<float> normed(rows * k), want(rows * n);
    ASSERT_TRUE(cpu_.RmsNorm(HostTensor(h, {rows, k}), HostTensor(norm_w, {k}), 1e-5f,
                             HostTensor(normed, {rows, k}))
                    .ok());
    normed = RoundTo(dtype(), normed);
    ASSERT_TRUE(cpu_.Linear(HostTensor(normed, {rows, k}), HostTensor(w, {n, k}), Tensor(),
                            HostTensor(want, {rows, n}))
                    .ok());
    DeviceTensor d_h(*gpu_, dtype(), {rows, k}), d_norm_w(*gpu_, dtype(), {k});
    DeviceTensor d_x(*gpu_, dtype(), {rows, k}), d_w(*gpu_, dtype(), {n, k});
    DeviceTensor d_out(*gpu_, dtype(), {rows, n});
    d_h.Set(h);
    d_norm_w.Set(norm_w);
    d_w.Set(w);
    for (int round = 0; round < 5; ++round) {
      d_x.Set(std::vector<float>(rows * k, std::nanf("")));
      ASSERT_TRUE(cuda::LaunchSpin(200, gpu_->stream()).ok());
      ASSERT_TRUE(cuda::LaunchRmsNormFast(Tensor(), d_h, d_norm_w, 1e-5f, d_x, gpu_->stream()).ok());
      ASSERT_TRUE(cuda::LaunchGemvSmallM(d_x, d_w, Tensor(), d_out, gpu_->stream()).ok());
      ExpectClose(d_out.Get(), want, "GEMV after RMSNorm");
    }
  }
}

// The down projection's fused variant: silu(gate) · up computed as x is
// loaded, against the CPU's SiluMul then Linear, on every row count it
// takes, widths that are and are not whole CTA passes (256 vectors of 8),
// and row counts of W that leave a CTA's last rows empty.
TEST_P(CudaOpsTest, SiluMulGemvMatchesTheCpu) {
  if (dtype() == DType::kFloat32) return;  // refused above, with the plain kernel
  struct Shape {
    int64_t n, k;
  };
  for (const Shape& s : {Shape{1, 64}, Shape{13, 2048}, Shape{301, 520}, Shape{64, 8192}}) {
    for (int64_t rows = 1; rows <= cuda::kGemvMaxRows; ++rows) {
      for (DType out_dtype : {dtype(), DType::kFloat32}) {
        SCOPED_TRACE(::testing::Message() << "silu([" << rows << ", 2 x " << s.k << "]) x [" << s.n
                                          << ", " << s.k << "]ᵀ, out " << DTypeName(out_dtype));
        std::vector<float> gate_up = RandomValues(rng_, rows * 2 * s.k, dtype(), 3.f);
        std::vector<float> w = RandomValues(rng_, s.n * s.k, dtype(), 0.05f);
        std::vector<float> act(rows * s.k), want(rows * s.n);
        ASSERT_TRUE(cpu_.SiluMul(HostTensor(gate_up, {rows, 2 * s.k}), HostTensor(act, {rows, s.k}))
                        .ok());
        // The activation as the GPU stores it between the two unfused kernels.
        act = RoundTo(dtype(), act);
        ASSERT_TRUE(cpu_.Linear(HostTensor(act, {rows, s.k}), HostTensor(w, {s.n, s.k}), Tensor(),
                                HostTensor(want, {rows, s.n}))
                        .ok());
        DeviceTensor d_gate_up(*gpu_, dtype(), {rows, 2 * s.k}), d_w(*gpu_, dtype(), {s.n, s.k});
        DeviceTensor d_out(*gpu_, out_dtype, {rows, s.n});
        d_gate_up.Set(gate_up);
        d_w.Set(w);
        ASSERT_TRUE(cuda::GemvSiluMulServes(d_gate_up, d_w, Tensor(), d_out));
        ASSERT_TRUE(cuda::LaunchGemvSiluMul(d_gate_up, d_w, Tensor(), d_out, gpu_->stream()).ok());
        ExpectClose(d_out.Get(), want, "GemvSiluMul");
      }
    }
  }
  // Through the backend as the model calls it. No Warmup has tuned this
  // backend's plans, so this is the unfused path (norm or SiLU·mul, then
  // Linear); the fused one serves where tuning picks the GEMV, which
  // cuda_engine_test's decode steps exercise.
  const int64_t rows = 3, n = 96, k = 512;
  std::vector<float> gate_up = RandomValues(rng_, rows * 2 * k, dtype(), 3.f);
  std::vector<float> w = RandomValues(rng_, n * k, dtype(), 0.05f);
  std::vector<float> act(rows * k), want(rows * n);
  ASSERT_TRUE(cpu_.SiluMul(HostTensor(gate_up, {rows, 2 * k}), HostTensor(act, {rows, k})).ok());
  act = RoundTo(dtype(), act);
  ASSERT_TRUE(
      cpu_.Linear(HostTensor(act, {rows, k}), HostTensor(w, {n, k}), Tensor(), HostTensor(want, {rows, n}))
          .ok());
  DeviceTensor d_gate_up(*gpu_, dtype(), {rows, 2 * k}), d_act(*gpu_, dtype(), {rows, k});
  DeviceTensor d_w(*gpu_, dtype(), {n, k}), d_out(*gpu_, dtype(), {rows, n});
  d_gate_up.Set(gate_up);
  d_w.Set(w);
  ASSERT_TRUE(gpu_->SiluMulLinear(d_gate_up, d_act, d_w, Tensor(), d_out).ok());
  ExpectClose(d_out.Get(), want, "SiluMulLinear");
  // A gate_up that is not twice the weight's width is refused by name.
  DeviceTensor bad(*gpu_, dtype(), {rows, 2 * k + 8});
  EXPECT_FALSE(cuda::GemvSiluMulServes(bad, d_w, Tensor(), d_out));
}

TEST_P(CudaOpsTest, RopeSplitRotatesQAndKAndCopiesV) {
  for (int dim : {16, 64, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(dim));
    const int heads = 8, kv_heads = 2;
    const int64_t tokens = 29, max_pos = 300, row = (heads + 2 * kv_heads) * dim;
    std::vector<float> qkv = RandomValues(rng_, tokens * row, dtype());
    std::vector<float> cos_sin = RandomValues(rng_, max_pos * dim, DType::kFloat32);
    std::vector<int32_t> positions(tokens);
    for (int32_t& p : positions) p = static_cast<int32_t>(rng_() % max_pos);
    positions[0] = 0;
    positions[1] = static_cast<int32_t>(max_pos - 1);
    std::vector<float> q(tokens * heads * dim), k(tokens * kv_heads * dim), v(k.size());
    RopeSplitParams p{HostTensor(qkv, {tokens, row}), HostInts(positions, {tokens}),
                      HostTensor(cos_sin, {max_pos, dim}), HostTensor(q, {tokens, heads, dim}),
                      HostTensor(k, {tokens, kv_heads, dim}), HostTensor(v, {tokens, kv_heads, dim}),
                      AttentionShape{heads, kv_heads, dim, 1.f}};
    ASSERT_TRUE(cpu_.RopeSplitQkv(p).ok());
    DeviceTensor d_qkv(*gpu_, dtype(), {tokens, row}), d_pos(*gpu_, DType::kInt32, {tokens});
    DeviceTensor d_cs(*gpu_, DType::kFloat32, {max_pos, dim});
    DeviceTensor d_q(*gpu_, dtype(), {tokens, heads, dim}), d_k(*gpu_, dtype(), {tokens, kv_heads, dim});
    DeviceTensor d_v(*gpu_, dtype(), {tokens, kv_heads, dim});
    d_qkv.Set(qkv);
    d_pos.SetInts(positions);
    d_cs.Set(cos_sin);
    RopeSplitParams dp{d_qkv, d_pos, d_cs, d_q, d_k, d_v, p.shape};
    ASSERT_TRUE(gpu_->RopeSplitQkv(dp).ok());
    ExpectClose(d_q.Get(), q, "q");
    ExpectClose(d_k.Get(), k, "k");
    ExpectClose(d_v.Get(), v, "v");
  }
}

// With a cache, the op also writes each token's rotated K and its V at its
// slot (padded rows nowhere): the same cache as the CPU's, on the fused
// kernel and on the reference (rotation, then the cache write).
TEST_P(CudaOpsTest, RopeSplitWritesTheKvCache) {
  for (int dim : {64, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(dim));
    const int heads = 8, kv_heads = 2, block_size = 16, blocks = 5;
    const int64_t tokens = 13, max_pos = 300, row = (heads + 2 * kv_heads) * dim;
    const int64_t cache_elems = int64_t(blocks) * block_size * kv_heads * dim;
    std::vector<float> qkv = RandomValues(rng_, tokens * row, dtype());
    std::vector<float> cos_sin = RandomValues(rng_, max_pos * dim, DType::kFloat32);
    std::vector<float> cache_in = RandomValues(rng_, cache_elems, dtype());
    std::vector<int32_t> positions(tokens), slots(tokens);
    for (int64_t t = 0; t < tokens; ++t) {
      positions[t] = static_cast<int32_t>(rng_() % max_pos);
      slots[t] = static_cast<int32_t>((t * 7 + 3) % (blocks * block_size));  // distinct
    }
    slots[4] = kPadSlot;
    std::vector<float> q(tokens * heads * dim), k(tokens * kv_heads * dim), v(k.size());
    std::vector<float> want_k = cache_in, want_v = cache_in;
    RopeSplitParams p;
    p.qkv = HostTensor(qkv, {tokens, row});
    p.positions = HostInts(positions, {tokens});
    p.cos_sin = HostTensor(cos_sin, {max_pos, dim});
    p.q_out = HostTensor(q, {tokens, heads, dim});
    p.k_out = HostTensor(k, {tokens, kv_heads, dim});
    p.v_out = HostTensor(v, {tokens, kv_heads, dim});
    p.shape = AttentionShape{heads, kv_heads, dim, 1.f};
    p.slot_mapping = HostInts(slots, {tokens});
    p.cache = PagedKvCache{HostTensor(want_k, {blocks, block_size, kv_heads, dim}),
                           HostTensor(want_v, {blocks, block_size, kv_heads, dim}), block_size};
    ASSERT_TRUE(cpu_.RopeSplitQkv(p).ok());
    for (auto [name, gpu] : Backends()) {
      SCOPED_TRACE(name);
      DeviceTensor d_qkv(*gpu, dtype(), {tokens, row}), d_pos(*gpu, DType::kInt32, {tokens});
      DeviceTensor d_cs(*gpu, DType::kFloat32, {max_pos, dim}), d_slots(*gpu, DType::kInt32, {tokens});
      DeviceTensor d_q(*gpu, dtype(), {tokens, heads, dim}), d_k(*gpu, dtype(), {tokens, kv_heads, dim});
      DeviceTensor d_v(*gpu, dtype(), {tokens, kv_heads, dim});
      DeviceTensor d_ck(*gpu, dtype(), {blocks, block_size, kv_heads, dim});
      DeviceTensor d_cv(*gpu, dtype(), {blocks, block_size, kv_heads, dim});
      d_qkv.Set(qkv);
      d_pos.SetInts(positions);
      d_cs.Set(cos_sin);
      d_slots.SetInts(slots);
      d_ck.Set(cache_in);
      d_cv.Set(cache_in);
      RopeSplitParams dp = p;
      dp.qkv = d_qkv, dp.positions = d_pos, dp.cos_sin = d_cs;
      dp.q_out = d_q, dp.k_out = d_k, dp.v_out = d_v, dp.slot_mapping = d_slots;
      dp.cache = PagedKvCache{d_ck, d_cv, block_size};
      ASSERT_TRUE(gpu->RopeSplitQkv(dp).ok());
      ExpectClose(d_q.Get(), q, "q");
      ExpectClose(d_k.Get(), k, "k");
      ExpectClose(d_v.Get(), v, "v");
      ExpectClose(d_ck.Get(), want_k, "K cache");
      ExpectClose(d_cv.Get(), want_v, "V cache");
      // The slots no token names keep their contents exactly.
      const std::vector<float> got_k = d_ck.Get();
      std::vector<bool> written(blocks * block_size, false);
      for (int32_t slot : slots) {
        if (slot != kPadSlot) written[slot] = true;
      }
      for (int slot = 0; slot < blocks * block_size; ++slot) {
        if (written[slot]) continue;
        for (int e = 0; e < kv_heads * dim; ++e) {
          ASSERT_EQ(got_k[int64_t(slot) * kv_heads * dim + e], cache_in[int64_t(slot) * kv_heads * dim + e])
              << "slot " << slot;
        }
      }
    }
  }
}

TEST_P(CudaOpsTest, SiluMul) {
  const int64_t tokens = 9, inter = 1000;
  std::vector<float> gate_up = RandomValues(rng_, tokens * 2 * inter, dtype(), 3.f);
  std::vector<float> want(tokens * inter);
  ASSERT_TRUE(cpu_.SiluMul(HostTensor(gate_up, {tokens, 2 * inter}), HostTensor(want, {tokens, inter})).ok());
  DeviceTensor d_in(*gpu_, dtype(), {tokens, 2 * inter}), d_out(*gpu_, dtype(), {tokens, inter});
  d_in.Set(gate_up);
  ASSERT_TRUE(gpu_->SiluMul(d_in, d_out).ok());
  ExpectClose(d_out.Get(), want, "SiluMul");
  // A width that is not a whole number of 16-byte vectors: the scalar kernel.
  const int64_t odd = 997;
  std::vector<float> odd_in = RandomValues(rng_, tokens * 2 * odd, dtype(), 3.f);
  std::vector<float> odd_want(tokens * odd);
  ASSERT_TRUE(cpu_.SiluMul(HostTensor(odd_in, {tokens, 2 * odd}), HostTensor(odd_want, {tokens, odd})).ok());
  DeviceTensor d_odd_in(*gpu_, dtype(), {tokens, 2 * odd}), d_odd_out(*gpu_, dtype(), {tokens, odd});
  d_odd_in.Set(odd_in);
  ASSERT_TRUE(gpu_->SiluMul(d_odd_in, d_odd_out).ok());
  ExpectClose(d_odd_out.Get(), odd_want, "SiluMul, 997 wide");
}

TEST_P(CudaOpsTest, OutOfRangeIdsFailAtTheNextSyncWithTheCpuMessage) {
  const int64_t vocab = 50, hidden = 64;
  std::vector<float> table = RandomValues(rng_, vocab * hidden, dtype());
  std::vector<int32_t> ids = {3, 50, 7};
  std::vector<float> cpu_out(ids.size() * hidden);
  const absl::Status want = cpu_.Embedding(HostInts(ids, {3}), HostTensor(table, {vocab, hidden}),
                                           HostTensor(cpu_out, {3, hidden}));
  ASSERT_TRUE(absl::IsOutOfRange(want)) << want;
  DeviceTensor d_table(*gpu_, dtype(), {vocab, hidden}), d_ids(*gpu_, DType::kInt32, {3});
  DeviceTensor d_out(*gpu_, dtype(), {3, hidden});
  d_table.Set(table);
  d_ids.SetInts(ids);
  ASSERT_TRUE(gpu_->Embedding(d_ids, d_table, d_out).ok());  // enqueued; found on the device
  const absl::Status got = gpu_->Synchronize();
  EXPECT_TRUE(absl::IsOutOfRange(got)) << got;
  EXPECT_EQ(got.message(), want.message());
  EXPECT_TRUE(gpu_->Synchronize().ok()) << "the error is reported once, then cleared";
  // The bad row is zero-filled, the others are right: no NaN left behind.
  EXPECT_FALSE(AnyNonFinite(d_out.Get()));
}

TEST_P(CudaOpsTest, ShapeErrorsAreTheCpuBackendsInvalidArgument) {
  DeviceTensor x(*gpu_, dtype(), {4, 64}), w(*gpu_, dtype(), {32, 48}), out(*gpu_, dtype(), {4, 32});
  const absl::Status s = gpu_->Linear(x, w, Tensor(), out);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

INSTANTIATE_TEST_SUITE_P(DTypes, CudaOpsTest,
                         ::testing::Values(DType::kFloat32, DType::kBFloat16, DType::kFloat16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace kvserve::testing
