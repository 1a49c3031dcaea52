#include "server/tool_calls/json_scan.h"

#include "absl/strings/ascii.h"
#include "nlohmann/json.hpp"

namespace kvserve::tool_calls {

size_t JsonBracketEnd(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<FunctionCall> CallFromJson(std::string_view json_text) {
  const nlohmann::ordered_json call =
      nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (call.is_discarded() || !call.is_object()) return std::nullopt;
  auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) {
    return std::nullopt;
  }
  auto args = call.find("arguments");
  if (args == call.end()) args = call.find("parameters");
  FunctionCall out{name->get<std::string>(), "{}"};
  if (args == call.end() || args->is_null()) return out;  // a function without parameters
  if (args->is_object()) {
    out.arguments = args->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } else if (args->is_string()) {
    // Arguments already serialized (some fine-tunes do): kept if they are JSON.
    const std::string text = args->get<std::string>();
    const auto inner = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (inner.is_discarded() || !inner.is_object()) return std::nullopt;
    out.arguments = text;
  } else {
    return std::nullopt;
  }
  return out;
}

size_t SkipSpace(std::string_view text, size_t pos) {
  while (pos < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  return pos;
}

std::string_view Trim(std::string_view text) {
  const size_t begin = SkipSpace(text, 0);
  size_t end = text.size();
  while (end > begin && absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

size_t PartialMarkerStart(std::string_view text, std::string_view marker) {
  const size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return text.size() - n;
  }
  return std::string_view::npos;
}

}  // namespace kvserve::tool_calls
