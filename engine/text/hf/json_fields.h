// Typed, non-throwing access to tokenizer.json fields. Every failure is an
// InvalidArgumentError that names the field by its path (e.g.
// "model.merges[12]"), so a malformed file says what is wrong and where.
// The typed reads are base/json_fields.h's (shared with config.json), with
// tokenizer.json's error style, paths and fallbacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

using Json = nlohmann::json;

/// InvalidArgumentError("tokenizer.json: <path>: <message>").
absl::Status FieldError(absl::string_view path, absl::string_view message);

/// "<parent>.<key>" (or just key at the top level).
std::string JoinPath(absl::string_view parent, absl::string_view key);

/// The member `key` of `object`, or null when absent. `object` must be an object.
const Json* FindField(const Json& object, absl::string_view key);

/// The member `key`; an error when absent or (for the typed forms) of another type.
absl::StatusOr<const Json*> RequiredField(const Json& object, absl::string_view key,
                                          absl::string_view parent);
absl::StatusOr<std::string> StringField(const Json& object, absl::string_view key,
                                        absl::string_view parent);
/// Absent or null: `fallback`.
absl::StatusOr<std::string> OptionalStringField(const Json& object, absl::string_view key,
                                                absl::string_view parent,
                                                const std::string& fallback);
absl::StatusOr<bool> BoolField(const Json& object, absl::string_view key,
                               absl::string_view parent, bool fallback);
absl::StatusOr<int64_t> IntField(const Json& object, absl::string_view key,
                                 absl::string_view parent, int64_t fallback);

/// A token id: an integer in [0, 2^31).
absl::StatusOr<int32_t> TokenId(const Json& value, absl::string_view path);

/// The "type" of a component object, e.g. "BPE" or "Sequence".
absl::StatusOr<std::string> ComponentType(const Json& object, absl::string_view path);

/// A component's list member (e.g. a Sequence's "normalizers"), checked to be an array.
absl::StatusOr<const Json*> ArrayField(const Json& object, absl::string_view key,
                                       absl::string_view parent);

}  // namespace kvserve::hf
