#include "kernels/dtype.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/q8_0.h"
#include "kernels/quant/dequantize.h"

namespace kvserve {

bool IsBlockDType(DType dtype) { return DTypeBlockElems(dtype) > 1; }

int64_t DTypeBlockElems(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1: return 32;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ2_K:
    case DType::kQ3_K: return 256;
    default: return 1;
  }
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_0: return 18;
    case DType::kQ4_1: return 20;
    case DType::kQ5_0: return 22;
    case DType::kQ5_1: return 24;
    case DType::kQ4_K: return 144;
    case DType::kQ5_K: return 176;
    case DType::kQ6_K: return 210;
    case DType::kQ2_K: return 84;
    case DType::kQ3_K: return 110;
  }
  return 0;
}

size_t DTypeBytes(DType dtype, int64_t count) {
  return static_cast<size_t>(count / DTypeBlockElems(dtype)) * DTypeSize(dtype);
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_0: return "q5_0";
    case DType::kQ5_1: return "q5_1";
    case DType::kQ4_K: return "q4_k";
    case DType::kQ5_K: return "q5_k";
    case DType::kQ6_K: return "q6_k";
    case DType::kQ2_K: return "q2_k";
    case DType::kQ3_K: return "q3_k";
  }
  return "unknown";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "float32" || name == "fp32" || name == "float") return DType::kFloat32;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return DType::kFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype \"", name, "\" (expected float32, bfloat16 or float16)"));
}

float HalfToFloat(uint16_t bits) {
  uint32_t sign = (bits >> 15) & 1u;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // overflow → inf (incl. rounding)
  if (abs_bits < 0x38800000u) {                        // subnormal or zero in half
    // value = m * 2^-24 with m rounded to nearest even.
    float magnitude;
    std::memcpy(&magnitude, &abs_bits, sizeof(magnitude));
    float scaled = magnitude * 16777216.0f;  // 2^24, exact
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t exponent = ((abs_bits >> 23) - 112) << 10;
  uint32_t mantissa = abs_bits & 0x7fffffu;
  uint32_t half = exponent | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

}  // namespace kvserve

namespace kvserve {

absl::Status ConvertToFloat32(const void* src, DType src_dtype, int64_t count, float* dst) {
  switch (src_dtype) {
    case DType::kFloat32:
      std::memcpy(dst, src, sizeof(float) * count);
      return absl::OkStatus();
    case DType::kBFloat16: {
      const uint16_t* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < count; ++i) dst[i] = BFloat16ToFloat(in[i]);
      return absl::OkStatus();
    }
    case DType::kFloat16: {
      const uint16_t* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < count; ++i) dst[i] = HalfToFloat(in[i]);
      return absl::OkStatus();
    }
    case DType::kInt32: break;
    default:  // a block format
      if (count % DTypeBlockElems(src_dtype) != 0) break;
      DequantizeBlocks(src_dtype, src, count / DTypeBlockElems(src_dtype), dst);
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cannot convert ", count, " elements of ", DTypeName(src_dtype), " to float32"));
}

absl::Status ConvertFromFloat32(const float* src, int64_t count, DType dst_dtype, void* dst) {
  switch (dst_dtype) {
    case DType::kFloat32:
      std::memcpy(dst, src, sizeof(float) * count);
      return absl::OkStatus();
    case DType::kBFloat16: {
      uint16_t* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = FloatToBFloat16(src[i]);
      return absl::OkStatus();
    }
    case DType::kFloat16: {
      uint16_t* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = FloatToHalf(src[i]);
      return absl::OkStatus();
    }
    case DType::kQ8_0:
      if (count % kQ8_0BlockSize != 0) break;
      QuantizeQ8_0(src, count, static_cast<BlockQ8_0*>(dst));
      return absl::OkStatus();
    default: break;  // int32; the other block formats are never written here
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cannot convert ", count, " float32 values to ", DTypeName(dst_dtype)));
}

}  // namespace kvserve
