#include "engine/text/hf/json_fields.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "base/json_fields.h"

namespace kvserve::hf {
namespace {

const json::FieldErrors kTokenizerJson{"tokenizer.json"};

}  // namespace

absl::Status FieldError(absl::string_view path, absl::string_view message) {
  return kTokenizerJson(path, message);
}

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

const Json* FindField(const Json& object, absl::string_view key) {
  return json::FindField(object, key);
}

absl::StatusOr<const Json*> RequiredField(const Json& object, absl::string_view key,
                                          absl::string_view parent) {
  if (!object.is_object()) return FieldError(parent, "must be an object");
  const Json* value = FindField(object, key);
  if (value == nullptr) return FieldError(JoinPath(parent, key), "is missing");
  return value;
}

absl::StatusOr<std::string> StringField(const Json& object, absl::string_view key,
                                        absl::string_view parent) {
  absl::StatusOr<const Json*> value = RequiredField(object, key, parent);
  if (!value.ok()) return value.status();
  if (!(*value)->is_string()) return FieldError(JoinPath(parent, key), "must be a string");
  return (*value)->get<std::string>();
}

absl::StatusOr<std::string> OptionalStringField(const Json& object, absl::string_view key,
                                                absl::string_view parent,
                                                const std::string& fallback) {
  absl::StatusOr<std::optional<std::string>> value =
      json::OptionalString(object, key, JoinPath(parent, key), kTokenizerJson);
  if (!value.ok()) return value.status();
  return value->value_or(fallback);
}

absl::StatusOr<bool> BoolField(const Json& object, absl::string_view key,
                               absl::string_view parent, bool fallback) {
  absl::StatusOr<std::optional<bool>> value =
      json::OptionalBool(object, key, JoinPath(parent, key), kTokenizerJson);
  if (!value.ok()) return value.status();
  return value->value_or(fallback);
}

absl::StatusOr<int64_t> IntField(const Json& object, absl::string_view key,
                                 absl::string_view parent, int64_t fallback) {
  absl::StatusOr<std::optional<int64_t>> value =
      json::OptionalInt(object, key, JoinPath(parent, key), kTokenizerJson);
  if (!value.ok()) return value.status();
  return value->value_or(fallback);
}

absl::StatusOr<int32_t> TokenId(const Json& value, absl::string_view path) {
  if (value.is_number_unsigned()) {
    const uint64_t id = value.get<uint64_t>();
    if (id <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return static_cast<int32_t>(id);
    }
  } else if (value.is_number_integer()) {
    return FieldError(path, absl::StrCat("token id must not be negative, got ",
                                         value.get<int64_t>()));
  } else {
    return FieldError(path, "token id must be an integer");
  }
  return FieldError(path, "token id is too large");
}

absl::StatusOr<std::string> ComponentType(const Json& object, absl::string_view path) {
  if (!object.is_object()) return FieldError(path, "must be an object or null");
  return StringField(object, "type", path);
}

absl::StatusOr<const Json*> ArrayField(const Json& object, absl::string_view key,
                                       absl::string_view parent) {
  absl::StatusOr<const Json*> value = RequiredField(object, key, parent);
  if (!value.ok()) return value.status();
  if (!(*value)->is_array()) return FieldError(JoinPath(parent, key), "must be an array");
  return value;
}

}  // namespace kvserve::hf
