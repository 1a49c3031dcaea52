#include "engine/text/chat_template/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {

namespace {

Value FromJsonAt(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxValueNesting) {
    Fail(absl::StrCat("template variables nest more than ", kMaxValueNesting, " levels deep"));
  }
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::MakeNone();
    case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) Fail(absl::StrCat("integer ", u, " does not fit in 64 bits"));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJsonAt(item, depth + 1));
      return Value::MakeList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [key, item] : json.items()) dict.Set(key, FromJsonAt(item, depth + 1));
      return Value::MakeDict(std::move(dict));
    }
    default: Fail("binary values are not supported in template variables");
  }
}

}  // namespace

Value FromJson(const nlohmann::ordered_json& json) { return FromJsonAt(json, 1); }

namespace {

void DumpString(const std::string& s, bool ensure_ascii, std::string* out) {
  *out += '"';
  std::vector<std::string> chars = ensure_ascii ? SplitCodepoints(s) : std::vector<std::string>{};
  auto escape_byte = [&](unsigned char c) {
    switch (c) {
      case '"': *out += "\\\""; return true;
      case '\\': *out += "\\\\"; return true;
      case '\n': *out += "\\n"; return true;
      case '\r': *out += "\\r"; return true;
      case '\t': *out += "\\t"; return true;
      case '\b': *out += "\\b"; return true;
      case '\f': *out += "\\f"; return true;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
          return true;
        }
        return false;
    }
  };
  if (!ensure_ascii) {
    for (unsigned char c : s) {
      if (!escape_byte(c)) *out += static_cast<char>(c);
    }
  } else {
    for (const std::string& ch : chars) {
      unsigned char lead = static_cast<unsigned char>(ch[0]);
      if (lead < 0x80) {
        if (!escape_byte(lead)) *out += ch;
        continue;
      }
      // Decode and write \uXXXX (a surrogate pair above the BMP), as json.dumps does.
      uint32_t cp = ch.size() == 2 ? (lead & 0x1F) : ch.size() == 3 ? (lead & 0x0F) : (lead & 0x07);
      for (size_t i = 1; i < ch.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(ch[i]) & 0x3F);
      char buf[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
    }
  }
  *out += '"';
}

void Dump(const Value& value, const JsonDumpOptions& options, int depth, std::string* out) {
  auto newline = [&](int level) {
    if (!options.indent) return;
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += *options.indent;
  };
  switch (value.kind()) {
    case Value::Kind::kNone: *out += "null"; return;
    case Value::Kind::kBool: *out += value.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: *out += absl::StrCat(value.as_int()); return;
    case Value::Kind::kFloat: {
      double d = value.as_float();
      if (std::isnan(d)) *out += "NaN";
      else if (std::isinf(d)) *out += d > 0 ? "Infinity" : "-Infinity";
      else *out += FloatRepr(d);
      return;
    }
    case Value::Kind::kString: DumpString(value.as_string(), options.ensure_ascii, out); return;
    case Value::Kind::kList: {
      const List& list = value.as_list();
      if (list.kind == ListKind::kGenerator || list.kind == ListKind::kView) {
        Fail(absl::StrCat("Object of type ", value.TypeName(), " is not JSON serializable"));
      }
      if (list.items.empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < list.items.size(); ++i) {
        if (i > 0) *out += options.item_separator;
        newline(depth + 1);
        Dump(list.items[i], options, depth + 1, out);
      }
      newline(depth);
      *out += ']';
      return;
    }
    case Value::Kind::kDict: {
      const Dict& dict = value.as_dict();
      if (dict.entries.empty()) {
        *out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : dict.entries) entries.push_back(&e);
      if (options.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += options.item_separator;
        newline(depth + 1);
        DumpString(entries[i]->first, options.ensure_ascii, out);
        *out += options.key_separator;
        Dump(entries[i]->second, options, depth + 1, out);
      }
      newline(depth);
      *out += '}';
      return;
    }
    default:
      Fail(absl::StrCat("Object of type ", value.TypeName(), " is not JSON serializable"));
  }
}

}  // namespace

std::string DumpJson(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  Dump(value, options, 0, &out);
  return out;
}

}  // namespace kvserve::chat_template
