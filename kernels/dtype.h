// Element types of device tensors, and host-side conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace kvserve {

// kQ8_0 ... kQ3_K are ggml's weight block formats (kernels/quant/
// block_formats.h: 32 or 256 weights per block, exactly as a GGUF file stores
// them), only for weight matrices on the CPU backend; their rows are whole
// blocks. (Q2_K and Q3_K came later: appended, so no value changes.)
enum class DType : uint8_t {
  kFloat32, kFloat16, kBFloat16, kInt32,
  kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K, kQ2_K, kQ3_K,
};

/// Whether `dtype` is one of the block formats (kQ8_0 ... kQ3_K).
bool IsBlockDType(DType dtype);
/// Elements per block: 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), 256 (the K-quants),
/// 1 for the element types.
int64_t DTypeBlockElems(DType dtype);
/// Bytes per element; for a block format, bytes per block.
size_t DTypeSize(DType dtype);
/// Bytes of `count` elements (for a block format, count / DTypeBlockElems blocks).
size_t DTypeBytes(DType dtype, int64_t count);
/// "float32", "float16", "bfloat16", "int32", "q8_0", "q4_0", ..., "q6_k", "q2_k", "q3_k".
absl::string_view DTypeName(DType dtype);
/// Parses the names above (and "fp32", "bf16", "fp16", "half").
absl::StatusOr<DType> ParseDType(absl::string_view name);

inline float BFloat16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

/// Round to nearest even, as PyTorch and CUDA's __float2bfloat16 do; NaN stays NaN.
inline uint16_t FloatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

/// IEEE 754 binary16 → float32, including subnormals, infinities and NaN.
float HalfToFloat(uint16_t bits);
/// float32 → IEEE 754 binary16, round to nearest even.
uint16_t FloatToHalf(float value);

}  // namespace kvserve

namespace kvserve {
/// Converts `count` elements of a float dtype to float32 (host memory).
absl::Status ConvertToFloat32(const void* src, DType src_dtype, int64_t count, float* dst);
/// Converts `count` float32 values to a float dtype (host memory).
absl::Status ConvertFromFloat32(const float* src, int64_t count, DType dst_dtype, void* dst);
}  // namespace kvserve
