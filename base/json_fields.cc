#include "base/json_fields.h"

#include "absl/strings/str_cat.h"

namespace kvserve::json {
namespace {

// The member if present and not null, else nullptr.
const Json* Present(const Json& object, absl::string_view key) {
  const Json* value = FindField(object, key);
  return value == nullptr || value->is_null() ? nullptr : value;
}

}  // namespace

absl::Status FieldErrors::operator()(absl::string_view path, absl::string_view problem) const {
  if (quote_field) return absl::InvalidArgumentError(absl::StrCat(file, ": \"", path, "\" ", problem));
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", path, ": ", problem));
}

const Json* FindField(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

absl::StatusOr<std::optional<int64_t>> OptionalInt(const Json& object, absl::string_view key,
                                                   absl::string_view path, const FieldErrors& errors) {
  const Json* value = Present(object, key);
  if (value == nullptr) return std::optional<int64_t>();
  if (!value->is_number_integer()) return errors(path, "must be an integer");
  return std::optional<int64_t>(value->get<int64_t>());
}

absl::StatusOr<std::optional<double>> OptionalNumber(const Json& object, absl::string_view key,
                                                     absl::string_view path, const FieldErrors& errors) {
  const Json* value = Present(object, key);
  if (value == nullptr) return std::optional<double>();
  if (!value->is_number()) return errors(path, "must be a number");
  return std::optional<double>(value->get<double>());
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& object, absl::string_view key,
                                                 absl::string_view path, const FieldErrors& errors) {
  const Json* value = Present(object, key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return errors(path, "must be true or false");
  return std::optional<bool>(value->get<bool>());
}

absl::StatusOr<std::optional<std::string>> OptionalString(const Json& object, absl::string_view key,
                                                          absl::string_view path,
                                                          const FieldErrors& errors) {
  const Json* value = Present(object, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return errors(path, "must be a string or null");
  return std::optional<std::string>(value->get<std::string>());
}

}  // namespace kvserve::json
