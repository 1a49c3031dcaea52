// GGUF key-value metadata: the typed values a file carries (architecture,
// hyperparameters, tokenizer vocabulary, chat template) and accessors whose
// errors name the key and the type that was expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvserve {

/// gguf_type in the file format; the values are the on-disk ids.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* GgufValueTypeName(GgufValueType type);

/// One metadata value. Integers of every width are widened (signed ones to
/// `i`, unsigned to `u`); arrays keep their element type.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  GgufValueType elem_type = GgufValueType::kUint8;  // arrays only
  std::vector<GgufValue> items;                      // arrays only

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }
};

class GgufMetadata {
 public:
  explicit GgufMetadata(std::string source = {}) : source_(std::move(source)) {}

  /// False when the key is already present (duplicates are a corrupt file).
  bool Add(std::string key, GgufValue value);
  const GgufValue* Find(absl::string_view key) const;
  bool Has(absl::string_view key) const { return Find(key) != nullptr; }
  size_t size() const { return values_.size(); }

  absl::StatusOr<std::string> GetString(absl::string_view key) const;
  /// Any integer type holding a non-negative value.
  absl::StatusOr<uint64_t> GetUint(absl::string_view key) const;
  /// A float (or integer) value.
  absl::StatusOr<double> GetFloat(absl::string_view key) const;
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  absl::StatusOr<std::vector<std::string>> GetStringArray(absl::string_view key) const;
  /// An array of any integer type.
  absl::StatusOr<std::vector<int64_t>> GetIntArray(absl::string_view key) const;
  /// An array of floats (or integers).
  absl::StatusOr<std::vector<double>> GetFloatArray(absl::string_view key) const;

 private:
  absl::Status TypeError(absl::string_view key, const GgufValue& v, absl::string_view want) const;
  absl::StatusOr<const GgufValue*> Require(absl::string_view key) const;

  std::string source_;  // file name, for messages
  std::map<std::string, GgufValue, std::less<>> values_;
};

}  // namespace kvserve
