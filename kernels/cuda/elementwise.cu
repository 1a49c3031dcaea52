#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "base/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dtype_dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/type_convert.cuh"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 256;

// One block per output row: out[i] = src[index[i]], copied in words of W (16,
// 4 or 2 bytes, whichever divides the row and both base pointers). An index
// outside [0, src_rows) is reported and its row zero-filled.
template <typename W>
__global__ void GatherRowsKernel(const W* __restrict__ src,       // [src_rows, words]
                                 const int32_t* __restrict__ index,  // [out_rows]
                                 int64_t src_rows, int64_t words,
                                 W* __restrict__ out,              // [out_rows, words]
                                 DeviceErrorCode code, DeviceError* error) {
  AllowDependents();  // the LM head's GEMV may start loading its weights (pdl.cuh)
  WaitForPrimary();
  const int64_t row = blockIdx.x;
  const int32_t r = index[row];
  W* o = out + row * words;
  if (r < 0 || r >= src_rows) {
    if (threadIdx.x == 0) ReportDeviceError(error, code, r, src_rows);
    for (int64_t i = threadIdx.x; i < words; i += blockDim.x) o[i] = W{};
    return;
  }
  const W* s = src + int64_t(r) * words;
  for (int64_t i = threadIdx.x; i < words; i += blockDim.x) o[i] = s[i];
}

bool Aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

absl::Status LaunchGather(Tensor src, Tensor index, Tensor out, DeviceErrorCode code,
                          DeviceError* error, cudaStream_t stream) {
  const int64_t rows = index.dim(0);
  if (rows == 0) return absl::OkStatus();
  const size_t row_bytes = static_cast<size_t>(src.row_elems()) * DTypeSize(src.dtype);
  auto launch = [&](auto word) {
    using W = decltype(word);
    // An error of the launch is left for the caller's RETURN_IF_LAUNCH_ERROR.
    LaunchDependent(GatherRowsKernel<W>, dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0,
                    stream, static_cast<const W*>(src.data), index.as<const int32_t>(),
                    src.dim(0), static_cast<int64_t>(row_bytes / sizeof(W)),
                    static_cast<W*>(out.data), code, error);
  };
  if (row_bytes % 16 == 0 && Aligned(src.data, 16) && Aligned(out.data, 16)) {
    launch(uint4{});
  } else if (row_bytes % 4 == 0 && Aligned(src.data, 4) && Aligned(out.data, 4)) {
    launch(uint32_t{});
  } else {
    launch(uint16_t{});
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

// Row-wise ops on a 2-D grid: rows over blockIdx.y, columns over
// blockIdx.x·blockDim.x + threadIdx.x, both grid-strided. No per-element
// division or modulo (64-bit ones cost ~dozens of instructions each): the
// row and column come straight from the grid. Row and column counts fit in
// int (checked on the host); offsets are 64-bit products.

// out = silu(gate) · up; float32 math as the CPU does it.
template <typename T>
__global__ void SiluMulKernel(const T* __restrict__ gate_up,  // [rows, 2 * inter]
                              int rows, int inter,
                              T* __restrict__ out) {          // [rows, inter]
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* g = gate_up + int64_t(r) * 2 * inter;
    T* o = out + int64_t(r) * inter;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < inter; c += gridDim.x * blockDim.x) {
      const float gate = ToFloat(g[c]);
      const float up = ToFloat(g[inter + c]);
      o[c] = FromFloat<T>(gate / (1.f + expf(-gate)) * up);
    }
  }
}

// The same with 16-byte vectors (rows a whole number of them, aligned): one
// thread per vector, a quarter to an eighth of the load instructions.
template <typename T>
__global__ void SiluMulVecKernel(const T* __restrict__ gate_up,  // [rows, 2 * inter]
                                 int rows, int inter_vecs,       // inter / kVec16<T>
                                 T* __restrict__ out) {          // [rows, inter]
  AllowDependents();  // the down projection's GEMV may start loading its weights (pdl.cuh)
  WaitForPrimary();
  constexpr int kVec = kVec16<T>;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* g = gate_up + int64_t(r) * 2 * inter_vecs * kVec;
    T* o = out + int64_t(r) * inter_vecs * kVec;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < inter_vecs;
         c += gridDim.x * blockDim.x) {
      float gate[kVec], up[kVec], result[kVec];
      LoadVec16(g + int64_t(c) * kVec, gate);
      LoadVec16(g + int64_t(inter_vecs + c) * kVec, up);
#pragma unroll
      for (int e = 0; e < kVec; ++e) result[e] = gate[e] / (1.f + expf(-gate[e])) * up[e];
      StoreVec16(result, o + int64_t(c) * kVec);
    }
  }
}

template <typename TOut, typename TBias>
__global__ void AddBiasKernel(const TBias* __restrict__ bias,  // [n]
                              int rows, int n,
                              TOut* __restrict__ out) {        // [rows, n]
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    TOut* o = out + int64_t(r) * n;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
      o[c] = FromFloat<TOut>(ToFloat(o[c]) + ToFloat(bias[c]));
    }
  }
}

// Enough blocks to cover one row's `cols` (capped; the kernel strides), one
// grid row per row up to the y limit (the kernel strides there too).
dim3 RowGrid(int64_t rows, int64_t cols) {
  const int64_t x = std::min<int64_t>((cols + kThreads - 1) / kThreads, 1024);
  const int64_t y = std::min<int64_t>(rows, 65535);
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

// The kernels index rows and columns in int (and cols · gridDim stays in int).
absl::Status CheckRowShape(absl::string_view op, int64_t rows, int64_t cols) {
  constexpr int64_t kLimit = std::numeric_limits<int>::max() / 2;
  if (rows > kLimit || cols > kLimit) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", rows, " x ", cols,
                                                   " is beyond the CUDA kernel's 32-bit indexing"));
  }
  return absl::OkStatus();
}

// Keeps the GPU busy for `ns` nanoseconds (the global timer), one thread.
__global__ void SpinKernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

absl::Status LaunchSpin(double microseconds, cudaStream_t stream) {
  SpinKernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(microseconds * 1000));
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status LaunchEmbedding(Tensor ids, Tensor table, Tensor out, DeviceError* error,
                             cudaStream_t stream) {
  return LaunchGather(table, ids, out, DeviceErrorCode::kTokenId, error, stream);
}

absl::Status LaunchGatherRows(Tensor x, Tensor rows, Tensor out, DeviceError* error,
                              cudaStream_t stream) {
  return LaunchGather(x, rows, out, DeviceErrorCode::kGatherRow, error, stream);
}

absl::Status LaunchSiluMul(Tensor gate_up, Tensor out, cudaStream_t stream) {
  const int64_t rows = out.dim(0), inter = out.dim(1);
  if (rows * inter == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckRowShape("SiluMul", rows, 2 * inter));
  return DispatchFloat(out.dtype, "SiluMul", [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    constexpr int kVec = kVec16<T>;
    if (inter % kVec == 0 && Aligned(gate_up.data, 16) && Aligned(out.data, 16)) {
      const int64_t vecs = inter / kVec;
      RETURN_IF_CUDA_ERROR(LaunchDependent(SiluMulVecKernel<T>, RowGrid(rows, vecs),
                                           dim3(kThreads), 0, stream, gate_up.as<const T>(),
                                           static_cast<int>(rows), static_cast<int>(vecs),
                                           out.as<T>()));
    } else {
      SiluMulKernel<T><<<RowGrid(rows, inter), kThreads, 0, stream>>>(
          gate_up.as<const T>(), static_cast<int>(rows), static_cast<int>(inter), out.as<T>());
    }
    RETURN_IF_LAUNCH_ERROR();
    return absl::OkStatus();
  });
}

absl::Status CheckKernelImage() {
  cudaFuncAttributes attributes{};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, SiluMulKernel<float>);
  if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice) {
    cudaGetLastError();
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA kernels were built for another GPU (CMAKE_CUDA_ARCHITECTURES, default 90a: "
        "H100/H200); this device is sm_", major, minor, ": ", cudaGetErrorString(err)));
  }
  RETURN_IF_CUDA_ERROR(err);
  return absl::OkStatus();
}

absl::Status LaunchAddBias(Tensor bias, Tensor out, cudaStream_t stream) {
  const int64_t rows = out.dim(0), n = out.dim(1);
  if (rows * n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckRowShape("AddBias", rows, n));
  return DispatchFloat(bias.dtype, "AddBias", [&](auto bias_tag) -> absl::Status {
    using TBias = decltype(bias_tag);
    auto launch = [&](auto out_tag) -> absl::Status {
      using TOut = decltype(out_tag);
      AddBiasKernel<TOut, TBias><<<RowGrid(rows, n), kThreads, 0, stream>>>(
          bias.as<const TBias>(), static_cast<int>(rows), static_cast<int>(n), out.as<TOut>());
      RETURN_IF_LAUNCH_ERROR();
      return absl::OkStatus();
    };
    // Only the bias's own dtype and the float32 logits occur (CheckLinear).
    if (out.dtype == DType::kFloat32) return launch(float{});
    if (out.dtype != bias.dtype) {
      return absl::InvalidArgumentError("AddBias: out must have the bias's dtype or float32");
    }
    return launch(TBias{});
  });
}

}  // namespace kvserve::cuda
