#include "engine/grammar/json_schema_converter.h"

#include <cctype>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/grammar/gbnf_text.h"

namespace kvserve::grammar {
namespace {

// Keywords that describe but never constrain: accepted and ignored.
bool IsAnnotation(std::string_view key) {
  static const std::set<std::string_view> kAnnotations = {
      "title",    "description", "default",       "examples",         "$comment",
      "$schema",  "$id",         "$defs",         "definitions",      "deprecated",
      "readOnly", "writeOnly",   "discriminator", "contentMediaType", "contentEncoding"};
  return kAnnotations.count(key) > 0 || key.substr(0, 2) == "x-";
}

// Keywords this converter enforces; any other is refused by name.
bool IsSupported(std::string_view key) {
  static const std::set<std::string_view> kSupported = {"type",
                                                        "enum",
                                                        "const",
                                                        "anyOf",
                                                        "oneOf",
                                                        "allOf",
                                                        "$ref",
                                                        "minLength",
                                                        "maxLength",
                                                        "pattern",
                                                        "format",
                                                        "minimum",
                                                        "maximum",
                                                        "exclusiveMinimum",
                                                        "exclusiveMaximum",
                                                        "properties",
                                                        "required",
                                                        "additionalProperties",
                                                        "items",
                                                        "prefixItems",
                                                        "additionalItems",
                                                        "minItems",
                                                        "maxItems"};
  return kSupported.count(key) > 0;
}

// The supported keywords other than `except` that `schema` has (constraints
// that could not be combined with a $ref, enum or union).
std::vector<std::string> OtherConstraints(const SchemaJson& schema,
                                          std::initializer_list<std::string_view> except) {
  std::vector<std::string> found;
  for (const auto& [key, value] : schema.items()) {
    if (IsAnnotation(key) || !IsSupported(key)) continue;
    if (std::find(except.begin(), except.end(), key) != except.end()) continue;
    found.push_back(key);
  }
  return found;
}

bool HasAny(const SchemaJson& schema, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    if (schema.contains(std::string(key))) return true;
  }
  return false;
}

bool MatchesType(const SchemaJson& value, std::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  }
  return false;
}

const std::set<std::string_view>& TypeNames() {
  static const std::set<std::string_view> kTypes = {"string", "integer", "number", "boolean",
                                                    "null",   "object",  "array"};
  return kTypes;
}

}  // namespace

std::string PointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status SchemaConverter::Error(const std::string& pointer, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(
      "json_schema: at ", pointer.empty() ? "/" : pointer, ": ", std::string(problem)));
}

std::string SchemaConverter::FreshName(const std::string& hint) {
  std::string base;
  for (char c : hint) {
    const bool word = std::isalnum(static_cast<unsigned char>(c));
    if (word) {
      base += c;
    } else if (!base.empty() && base.back() != '-') {
      base += '-';
    }
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.size() > 60) base.resize(60);
  if (base.empty()) base = "schema";
  std::string name = base;
  for (int i = 2; rules_.count(name) || IsBuiltinRuleName(name) ||
                  std::find(order_.begin(), order_.end(), name) != order_.end();
       ++i) {
    name = absl::StrCat(base, "-", i);
  }
  return name;
}

std::string SchemaConverter::AddRule(const std::string& hint, const std::string& body) {
  auto it = by_body_.find(body);
  if (it != by_body_.end()) return it->second;
  std::string name = FreshName(hint);
  rules_[name] = body;
  order_.push_back(name);
  by_body_[body] = name;
  return name;
}

absl::StatusOr<std::optional<int64_t>> SchemaConverter::Count(const SchemaJson& schema,
                                                              std::string_view key,
                                                              const std::string& pointer) {
  auto it = schema.find(std::string(key));
  if (it == schema.end()) return std::optional<int64_t>();
  const std::string at = absl::StrCat(pointer, "/", std::string(key));
  if (!MatchesType(*it, "integer") || it->get<double>() < 0) {
    return Error(at, absl::StrCat(std::string(key), " must be a non-negative integer"));
  }
  const double value = it->get<double>();
  if (value > static_cast<double>(kMaxSchemaCount)) {
    return Error(at, absl::StrCat(std::string(key), " ", it->dump(), " is above the supported ",
                                  kMaxSchemaCount));
  }
  return std::optional<int64_t>(static_cast<int64_t>(value));
}

bool SchemaConverter::Referenced(const std::string& name, const std::string& except) const {
  const auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  };
  for (const auto& [rule, body] : rules_) {
    if (rule == except) continue;
    for (size_t at = body.find(name); at != std::string::npos; at = body.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at == 0 || !is_name_char(body[at - 1])) &&
          (end == body.size() || !is_name_char(body[end]))) {
        return true;  // or a literal that spells it: then the rule just stays
      }
    }
  }
  return false;
}

absl::StatusOr<std::string> SchemaConverter::Convert() {
  ref_rules_[""] = "root";
  order_.push_back("root");
  unconsumed_refs_.insert("");
  auto root = Visit(root_, "", "root", 0);
  if (!root.ok()) return root.status();
  rules_["root"] = *root;
  // `root ::= root-2` with root-2 used nowhere else: the body moves into root.
  if (rules_.count(*root) && !IsBuiltinRuleName(*root) && !Referenced(*root, "root")) {
    rules_["root"] = rules_[*root];
    rules_.erase(*root);
    order_.erase(std::find(order_.begin(), order_.end(), *root));
  }
  std::string out;
  for (const std::string& name : order_) absl::StrAppend(&out, name, " ::= ", rules_[name], "\n");
  return out;
}

absl::StatusOr<std::string> SchemaConverter::Visit(const SchemaJson& schema,
                                                   const std::string& pointer,
                                                   const std::string& hint, int depth) {
  if (depth > kMaxSchemaDepth) {
    return Error(pointer, absl::StrCat("schema nests deeper than ", kMaxSchemaDepth, " levels"));
  }
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return Builtin("value");
    return Error(pointer, "schema false accepts no value");
  }
  if (!schema.is_object()) return Error(pointer, "a schema must be an object or a boolean");
  for (const auto& [key, value] : schema.items()) {
    if (IsAnnotation(key) || IsSupported(key)) continue;
    if (key == "uniqueItems" && value == false) continue;
    return Error(absl::StrCat(pointer, "/", PointerToken(key)),
                 absl::StrCat("unsupported keyword '", key, "'"));
  }
  const auto refuse_others = [&](std::string_view keyword,
                                 std::initializer_list<std::string_view> allowed) -> absl::Status {
    std::vector<std::string> others = OtherConstraints(schema, allowed);
    if (others.empty()) return absl::OkStatus();
    return Error(pointer, absl::StrCat("'", others[0], "' beside '", std::string(keyword),
                                       "' is not supported (move it into the referenced or "
                                       "listed schemas)"));
  };
  if (schema.contains("$ref")) {
    if (auto s = refuse_others("$ref", {"$ref"}); !s.ok()) return s;
    return VisitRef(schema, pointer, depth);
  }
  if (schema.contains("const") || schema.contains("enum")) {
    const std::string_view keyword = schema.contains("const") ? "const" : "enum";
    if (auto s = refuse_others(keyword, {keyword, "type"}); !s.ok()) return s;
    return VisitEnum(schema, pointer);
  }
  for (std::string_view keyword : {"anyOf", "oneOf"}) {
    auto it = schema.find(std::string(keyword));
    if (it == schema.end()) continue;
    if (auto s = refuse_others(keyword, {keyword}); !s.ok()) return s;
    return VisitUnion(*it, absl::StrCat(pointer, "/", std::string(keyword)), hint, depth);
  }
  if (auto it = schema.find("allOf"); it != schema.end()) {
    if (auto s = refuse_others("allOf", {"allOf"}); !s.ok()) return s;
    if (!it->is_array() || it->size() != 1) {
      return Error(pointer + "/allOf", "allOf is supported with exactly one schema");
    }
    return Visit((*it)[0], pointer + "/allOf/0", hint, depth + 1);
  }
  if (auto it = schema.find("format"); it != schema.end()) {
    static const std::set<std::string> kFormats = {"date", "time",  "date-time",
                                                   "uuid", "email", "ipv4"};
    if (!it->is_string() || !kFormats.count(it->get<std::string>())) {
      return Error(pointer + "/format",
                   absl::StrCat("unsupported format ", it->dump(),
                                " (supported: date, time, date-time, uuid, email, ipv4)"));
    }
  }

  std::vector<std::string> types;
  if (auto it = schema.find("type"); it != schema.end()) {
    const SchemaJson list = it->is_array() ? *it : SchemaJson::array({*it});
    for (const SchemaJson& type : list) {
      if (!type.is_string() || !TypeNames().count(type.get<std::string>())) {
        return Error(pointer + "/type", absl::StrCat("unknown type ", type.dump()));
      }
      types.push_back(type.get<std::string>());
    }
    if (types.empty()) return Error(pointer + "/type", "an empty type list accepts no value");
  } else {
    // No type: the one the keywords imply (a schema with `properties` is
    // taken to describe an object, ...); none at all is any value.
    if (HasAny(schema, {"properties", "required", "additionalProperties"}))
      types.push_back("object");
    if (HasAny(schema, {"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) {
      types.push_back("array");
    }
    if (HasAny(schema, {"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (HasAny(schema, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("number");
    }
    if (types.empty()) return Builtin("value");
  }
  std::vector<std::string> alternatives;
  for (const std::string& type : types) {
    auto expr =
        VisitType(schema, type, pointer, types.size() == 1 ? hint : hint + "-" + type, depth);
    if (!expr.ok()) return expr.status();
    alternatives.push_back(*expr);
  }
  if (alternatives.size() == 1) return alternatives[0];
  return AddRule(hint, absl::StrJoin(alternatives, " | "));
}

absl::StatusOr<std::string> SchemaConverter::VisitType(const SchemaJson& schema,
                                                       std::string_view type,
                                                       const std::string& pointer,
                                                       const std::string& hint, int depth) {
  if (type == "string") return VisitString(schema, pointer);
  if (type == "integer") return VisitNumber(schema, pointer, /*integer=*/true);
  if (type == "number") return VisitNumber(schema, pointer, /*integer=*/false);
  if (type == "boolean") return Builtin("boolean");
  if (type == "null") return Builtin("null");
  if (type == "object") return VisitObject(schema, pointer, hint, depth);
  return VisitArray(schema, pointer, hint, depth);
}

absl::StatusOr<std::string> SchemaConverter::VisitEnum(const SchemaJson& schema,
                                                       const std::string& pointer) {
  SchemaJson values;
  std::string at = pointer + "/const";
  if (schema.contains("const")) {
    values = SchemaJson::array({schema["const"]});
  } else {
    at = pointer + "/enum";
    values = schema["enum"];
    if (!values.is_array() || values.empty()) return Error(at, "enum must be a non-empty array");
  }
  std::vector<std::string> types;
  if (auto it = schema.find("type"); it != schema.end()) {
    for (const SchemaJson& type : it->is_array() ? *it : SchemaJson::array({*it})) {
      if (!type.is_string() || !TypeNames().count(type.get<std::string>())) {
        return Error(pointer + "/type", absl::StrCat("unknown type ", type.dump()));
      }
      types.push_back(type.get<std::string>());
    }
  }
  // Each value as its compact JSON text (the one form accepted), when the
  // type allows it.
  std::vector<std::string> literals;
  for (const SchemaJson& value : values) {
    const bool typed = types.empty() || std::any_of(types.begin(), types.end(),
                                                    [&](auto& t) { return MatchesType(value, t); });
    if (!typed) continue;
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      return Error(at, "a number too large for a double");
    }
    std::string literal = GbnfLiteral(value.dump());
    if (std::find(literals.begin(), literals.end(), literal) == literals.end()) {
      literals.push_back(literal);
    }
  }
  if (literals.empty()) return Error(at, "no value has the schema's type");
  if (literals.size() == 1) return literals[0];
  return "(" + absl::StrJoin(literals, " | ") + ")";
}

absl::StatusOr<std::string> SchemaConverter::VisitUnion(const SchemaJson& alternatives,
                                                        const std::string& pointer,
                                                        const std::string& hint, int depth) {
  if (!alternatives.is_array() || alternatives.empty()) {
    return Error(pointer, "must be a non-empty array of schemas");
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    auto part = Visit(alternatives[i], absl::StrCat(pointer, "/", i), absl::StrCat(hint, "-", i),
                      depth + 1);
    if (!part.ok()) return part.status();
    parts.push_back(*part);
  }
  if (parts.size() == 1) return parts[0];
  return AddRule(hint, absl::StrJoin(parts, " | "));
}

absl::StatusOr<std::string> SchemaConverter::VisitRef(const SchemaJson& schema,
                                                      const std::string& pointer, int depth) {
  const SchemaJson& ref = schema["$ref"];
  const std::string at = pointer + "/$ref";
  if (!ref.is_string()) return Error(at, "$ref must be a string");
  const std::string text = ref.get<std::string>();
  if (!absl::StartsWith(text, "#") || (text.size() > 1 && text[1] != '/')) {
    return Error(at, absl::StrCat("only local references (\"#\", \"#/$defs/...\", "
                                  "\"#/definitions/...\") are supported, not \"",
                                  text, "\""));
  }
  const std::string target_pointer = text.substr(1);
  // Walk the pointer's tokens from the root.
  const SchemaJson* target = &root_;
  std::string last = "root";
  if (!target_pointer.empty()) {
    for (absl::string_view raw : absl::StrSplit(target_pointer.substr(1), '/')) {
      std::string token;
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
          token += raw[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          token += raw[i];
        }
      }
      const SchemaJson* next = nullptr;
      if (target->is_object() && target->contains(token)) {
        next = &(*target)[token];
      } else if (target->is_array() && !token.empty() &&
                 token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10 &&
                 std::stoul(token) < target->size()) {
        next = &(*target)[std::stoul(token)];
      }
      if (next == nullptr) return Error(at, absl::StrCat("\"", text, "\" does not resolve"));
      target = next;
      last = token;
    }
  }
  if (auto it = ref_rules_.find(target_pointer); it != ref_rules_.end()) {
    if (unconsumed_refs_.count(target_pointer)) {
      return Error(at, absl::StrCat("\"", text,
                                    "\" refers back to itself with no object or array in between"));
    }
    return it->second;
  }
  const std::string name = FreshName(last);
  ref_rules_[target_pointer] = name;
  order_.push_back(name);
  unconsumed_refs_.insert(target_pointer);
  auto body = Visit(*target, target_pointer, name, depth + 1);
  unconsumed_refs_.erase(target_pointer);
  if (!body.ok()) return body.status();
  rules_[name] = *body;
  return name;
}

}  // namespace kvserve::grammar
