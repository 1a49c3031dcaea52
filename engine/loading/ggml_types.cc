#include "engine/loading/ggml_types.h"

#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

struct Entry {
  uint32_t id;
  GgmlTypeInfo info;
};

// Geometry from ggml's type_traits (ggml.c); names from gguf-py's
// GGMLQuantizationType. Types that ggml removed (31-33, Q4_0_4_4 & co.) are
// absent, so a file that still uses them is refused as an unknown type.
constexpr Entry kTypes[] = {
    {0, {"F32", 1, 4, true}},
    {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},
    {3, {"Q4_1", 32, 20, true}},
    {6, {"Q5_0", 32, 22, true}},
    {7, {"Q5_1", 32, 24, true}},
    {8, {"Q8_0", 32, 34, true}},
    {9, {"Q8_1", 32, 40, false}},
    {10, {"Q2_K", 256, 84, true}},
    {11, {"Q3_K", 256, 110, true}},
    {12, {"Q4_K", 256, 144, true}},
    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},
    {15, {"Q8_K", 256, 292, false}},
    {16, {"IQ2_XXS", 256, 66, false}},
    {17, {"IQ2_XS", 256, 74, false}},
    {18, {"IQ3_XXS", 256, 98, false}},
    {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, false}},
    {21, {"IQ3_S", 256, 110, false}},
    {22, {"IQ2_S", 256, 82, false}},
    {23, {"IQ4_XS", 256, 136, false}},
    {24, {"I8", 1, 1, false}},
    {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},
    {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, false}},
    {29, {"IQ1_M", 256, 56, false}},
    {30, {"BF16", 1, 2, true}},
    {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}},
    {39, {"MXFP4", 32, 17, false}},
    {40, {"NVFP4", 64, 36, false}},
    {41, {"Q1_0", 128, 18, false}},
};

}  // namespace

std::optional<GgmlTypeInfo> LookupGgmlType(uint32_t id) {
  for (const Entry& e : kTypes) {
    if (e.id == id) return e.info;
  }
  return std::nullopt;
}

std::optional<DType> BlockDTypeOfGgml(uint32_t id) {
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::kQ8_0: return DType::kQ8_0;
    case GgmlType::kQ4_0: return DType::kQ4_0;
    case GgmlType::kQ4_1: return DType::kQ4_1;
    case GgmlType::kQ5_0: return DType::kQ5_0;
    case GgmlType::kQ5_1: return DType::kQ5_1;
    case GgmlType::kQ4_K: return DType::kQ4_K;
    case GgmlType::kQ5_K: return DType::kQ5_K;
    case GgmlType::kQ6_K: return DType::kQ6_K;
    case GgmlType::kQ2_K: return DType::kQ2_K;
    case GgmlType::kQ3_K: return DType::kQ3_K;
    default: return std::nullopt;
  }
}

std::string GgmlTypeName(uint32_t id) {
  if (auto info = LookupGgmlType(id)) return info->name;
  return absl::StrCat("type ", id);
}

const char* SupportedGgmlTypeNames() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

}  // namespace kvserve
