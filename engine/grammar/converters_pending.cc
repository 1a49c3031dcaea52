// Stand-ins until the JSON Schema and regex converters land (engine/grammar
// CMakeLists.txt uses them only while those files are missing).
#include "absl/strings/str_cat.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/regex_to_gbnf.h"

namespace kvserve::grammar {

absl::StatusOr<std::string> JsonSchemaToGbnf(std::string_view) {
  return absl::UnimplementedError("json_schema is not supported by this build");
}
absl::StatusOr<std::string> RegexToGbnf(std::string_view) {
  return absl::UnimplementedError("regex is not supported by this build");
}

}  // namespace kvserve::grammar
