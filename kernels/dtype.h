// Element types of device tensors, and host-side conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace kvserve {

// kQ8_0 is a block format (kernels/q8_0.h: 32 weights in 34 bytes), only
// for weight matrices on the CPU backend; its rows are whole blocks.
enum class DType : uint8_t { kFloat32, kFloat16, kBFloat16, kInt32, kQ8_0 };

/// Bytes per element; for kQ8_0, bytes per 32-element block.
size_t DTypeSize(DType dtype);
/// Bytes of `count` elements (for kQ8_0, count / 32 blocks).
size_t DTypeBytes(DType dtype, int64_t count);
/// "float32", "float16", "bfloat16", "int32", "q8_0".
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
