#include "engine/grammar/json_schema_to_gbnf.h"

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/grammar/json_schema_converter.h"

namespace kvserve::grammar {
namespace {

// JSON text nesting past this is refused before anything walks it
// recursively (serializing enum values, for one).
constexpr int kMaxJsonDepth = 512;

}  // namespace

absl::StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json) {
  bool too_deep = false;
  SchemaJson schema;
  try {
    schema = SchemaJson::parse(schema_json.begin(), schema_json.end(),
                               [&](int depth, SchemaJson::parse_event_t, SchemaJson&) {
                                 if (depth > kMaxJsonDepth) too_deep = true;
                                 return !too_deep;
                               });
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("json_schema: not valid JSON: ", e.what()));
  }
  if (too_deep) {
    return absl::InvalidArgumentError(
        absl::StrCat("json_schema: JSON nests deeper than ", kMaxJsonDepth, " levels"));
  }
  return SchemaConverter(schema).Convert();
}

}  // namespace kvserve::grammar
