// The ggml tensor types a GGUF file can name: their block geometry (so every
// tensor's byte size can be checked, even one we refuse), their names (so a
// refusal says "IQ2_XXS", not "type 16"), and which ones kvserve dequantizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/dtype.h"

namespace kvserve {

/// ggml's type ids (ggml.h `enum ggml_type`); the values are the file format.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  const char* name;     // as ggml and gguf-py spell it: "Q4_K"
  int64_t block_size;   // elements per block
  int64_t type_size;    // bytes per block
  bool supported;       // dequantized by kvserve
};

/// The geometry and name of type id `id`, or nullopt for an id ggml does not
/// define (a corrupt file).
std::optional<GgmlTypeInfo> LookupGgmlType(uint32_t id);

/// The block DType of a ggml block format kvserve keeps (Q8_0, Q4_0, Q4_1,
/// Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), or nullopt for any other id.
std::optional<DType> BlockDTypeOfGgml(uint32_t id);

/// "Q4_K", or "type 99" for an unknown id.
std::string GgmlTypeName(uint32_t id);

/// The supported types' names, for messages: "F32, F16, BF16, Q8_0, ...".
const char* SupportedGgmlTypeNames();

}  // namespace kvserve
