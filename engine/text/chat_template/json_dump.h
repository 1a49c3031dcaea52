// Converts between the JSON a caller passes and template values, and dumps
// values the way transformers' tojson does: json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=sort_keys).
#pragma once

#include <optional>
#include <string>

#include "engine/text/chat_template/value.h"
#include "nlohmann/json.hpp"

namespace kvserve::chat_template {

Value FromJson(const nlohmann::ordered_json& json);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent, as the string of one level
  std::string item_separator = ", ";  // ", " when no indent, "," with one
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

/// Fails like json.dumps on values JSON cannot hold (undefined, functions).
std::string DumpJson(const Value& value, const JsonDumpOptions& options);

}  // namespace kvserve::chat_template
