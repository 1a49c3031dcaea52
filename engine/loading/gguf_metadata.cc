#include "engine/loading/gguf_metadata.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace kvserve {

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kUint16:
    case GgufValueType::kInt16: case GgufValueType::kUint32: case GgufValueType::kInt32:
    case GgufValueType::kUint64: case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

namespace {

bool IsSigned(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}

}  // namespace

bool GgufMetadata::Add(std::string key, GgufValue value) {
  return values_.emplace(std::move(key), std::move(value)).second;
}

const GgufValue* GgufMetadata::Find(absl::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

absl::Status GgufMetadata::TypeError(absl::string_view key, const GgufValue& v,
                                     absl::string_view want) const {
  std::string have = GgufValueTypeName(v.type);
  if (v.type == GgufValueType::kArray) have = absl::StrCat("array of ", GgufValueTypeName(v.elem_type));
  return absl::InvalidArgumentError(
      absl::StrCat(source_, ": GGUF metadata \"", key, "\" is ", have, ", expected ", want));
}

absl::StatusOr<const GgufValue*> GgufMetadata::Require(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": GGUF metadata has no \"", key, "\""));
  }
  return v;
}

absl::StatusOr<std::string> GgufMetadata::GetString(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kString) return TypeError(key, *v, "string");
  return v->s;
}

absl::StatusOr<uint64_t> GgufMetadata::GetUint(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!v->is_integer()) return TypeError(key, *v, "an integer");
  if (IsSigned(v->type)) {
    if (v->i < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": GGUF metadata \"", key, "\" is ", v->i, ", expected >= 0"));
    }
    return static_cast<uint64_t>(v->i);
  }
  return v->u;
}

absl::StatusOr<double> GgufMetadata::GetFloat(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->is_float()) return v->f;
  if (v->is_integer()) return IsSigned(v->type) ? double(v->i) : double(v->u);
  return TypeError(key, *v, "a number");
}

absl::StatusOr<bool> GgufMetadata::GetBool(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kBool) return TypeError(key, *v, "bool");
  return v->b;
}

absl::StatusOr<std::vector<std::string>> GgufMetadata::GetStringArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString) {
    return TypeError(key, *v, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->items.size());
  for (const GgufValue& item : v->items) out.push_back(item.s);
  return out;
}

absl::StatusOr<std::vector<int64_t>> GgufMetadata::GetIntArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  GgufValue probe;
  probe.type = v->elem_type;
  if (v->type != GgufValueType::kArray || !probe.is_integer()) {
    return TypeError(key, *v, "array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v->items.size());
  for (const GgufValue& item : v->items) {
    out.push_back(IsSigned(item.type) ? item.i : static_cast<int64_t>(item.u));
  }
  return out;
}

absl::StatusOr<std::vector<double>> GgufMetadata::GetFloatArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  GgufValue probe;
  probe.type = v->elem_type;
  if (v->type != GgufValueType::kArray || !(probe.is_float() || probe.is_integer())) {
    return TypeError(key, *v, "array of numbers");
  }
  std::vector<double> out;
  out.reserve(v->items.size());
  for (const GgufValue& item : v->items) {
    out.push_back(item.is_float() ? item.f : IsSigned(item.type) ? double(item.i) : double(item.u));
  }
  return out;
}

}  // namespace kvserve
