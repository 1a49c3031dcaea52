// Error checks for CUDA runtime and cuBLAS calls that keep the call text, file
// and line in the returned Status.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvserve::cuda {

inline absl::Status CudaStatus(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(file, ":", line, ": ", expr, ": ",
                                          cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

inline absl::Status CublasStatus(cublasStatus_t err, const char* expr, const char* file, int line) {
  if (err == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(file, ":", line, ": ", expr, ": cuBLAS ",
                                          cublasGetStatusName(err), ": ",
                                          cublasGetStatusString(err)));
}

}  // namespace kvserve::cuda

#define RETURN_IF_CUDA_ERROR(expr)                                                      \
  do {                                                                                  \
    ::absl::Status _kv_cuda_status = ::kvserve::cuda::CudaStatus((expr), #expr, __FILE__, __LINE__); \
    if (!_kv_cuda_status.ok()) return _kv_cuda_status;                                  \
  } while (0)

#define RETURN_IF_CUBLAS_ERROR(expr)                                                      \
  do {                                                                                    \
    ::absl::Status _kv_cublas_status =                                                    \
        ::kvserve::cuda::CublasStatus((expr), #expr, __FILE__, __LINE__);                 \
    if (!_kv_cublas_status.ok()) return _kv_cublas_status;                                \
  } while (0)

/// After a kernel launch: launch errors (bad configuration) surface here.
#define RETURN_IF_LAUNCH_ERROR() RETURN_IF_CUDA_ERROR(cudaGetLastError())
