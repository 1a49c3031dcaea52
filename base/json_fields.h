// Typed, non-throwing reads of optional JSON fields, shared by every file
// format the server parses (config.json, tokenizer.json, ...). Each failure
// is an InvalidArgumentError naming the file and the field, in the file's own
// style (see FieldErrors), so a malformed file says what is wrong and where.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::json {

using Json = nlohmann::json;

/// How a file's field errors read:
///   {"tokenizer.json"}        → tokenizer.json: model.merges[12]: must be a string
///   {"config.json", true}     → config.json: "hidden_size" must be an integer
struct FieldErrors {
  std::string file;
  bool quote_field = false;
  absl::Status operator()(absl::string_view path, absl::string_view problem) const;
};

/// The member `key` of `object`, or null when `object` is not an object or
/// has no such member. A JSON null member is returned as such.
const Json* FindField(const Json& object, absl::string_view key);

// Absent or JSON null: an empty optional. Another type: an error at `path`.
absl::StatusOr<std::optional<int64_t>> OptionalInt(const Json& object, absl::string_view key,
                                                   absl::string_view path, const FieldErrors& errors);
absl::StatusOr<std::optional<double>> OptionalNumber(const Json& object, absl::string_view key,
                                                     absl::string_view path, const FieldErrors& errors);
absl::StatusOr<std::optional<bool>> OptionalBool(const Json& object, absl::string_view key,
                                                 absl::string_view path, const FieldErrors& errors);
absl::StatusOr<std::optional<std::string>> OptionalString(const Json& object, absl::string_view key,
                                                          absl::string_view path,
                                                          const FieldErrors& errors);

}  // namespace kvserve::json
