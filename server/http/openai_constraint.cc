#include "server/http/openai_constraint.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvserve::http {
namespace {

// Ordered: a JSON Schema keeps its properties in the order the client wrote
// (the structured output writes them in that order, as OpenAI does).
using json = nlohmann::ordered_json;

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// A schema given as an object, or as its JSON text (vLLM accepts both).
absl::Status SchemaText(const std::string& path, const json& v, std::string& out) {
  if (v.is_object() || v.is_boolean()) {
    out = v.dump();
    return absl::OkStatus();
  }
  if (v.is_string()) {
    out = v.get<std::string>();
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(path, " must be a JSON Schema object (or its JSON text)"));
}

absl::Status StringField(const std::string& path, const json& v, std::string& out) {
  if (!v.is_string()) return Invalid(absl::StrCat(path, " must be a string"));
  out = v.get<std::string>();
  if (out.empty()) return Invalid(absl::StrCat(path, " must not be empty"));
  return absl::OkStatus();
}

absl::Status Choices(const std::string& path, const json& v, v1::SamplingParams& s) {
  if (!v.is_array() || v.empty()) {
    return Invalid(absl::StrCat(path, " must be a non-empty array of strings"));
  }
  v1::ChoiceList* list = s.mutable_choice();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return Invalid(absl::StrCat(path, "[", i, "] must be a string"));
    list->add_choices(v[i].get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ResponseFormat(const json& v, v1::SamplingParams& s, bool& set) {
  if (!v.is_object()) return Invalid("response_format must be an object");
  auto type = v.find("type");
  if (type == v.end() || !type->is_string()) {
    return Invalid("response_format.type must be \"text\", \"json_object\" or \"json_schema\"");
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return absl::OkStatus();
  set = true;
  if (t == "json_object") {
    s.set_json_object(true);
    return absl::OkStatus();
  }
  if (t != "json_schema") {
    return Invalid(absl::StrCat("response_format.type must be \"text\", \"json_object\" or "
                                "\"json_schema\", got \"", t, "\""));
  }
  auto spec = v.find("json_schema");
  if (spec == v.end() || !spec->is_object()) {
    return Invalid("response_format.json_schema must be an object with a \"schema\"");
  }
  auto name = spec->find("name");
  if (name != spec->end() && !name->is_string()) {
    return Invalid("response_format.json_schema.name must be a string");
  }
  auto strict = spec->find("strict");
  if (strict != spec->end() && !strict->is_null() && !strict->is_boolean()) {
    return Invalid("response_format.json_schema.strict must be a boolean");
  }
  auto schema = spec->find("schema");
  std::string text;
  if (schema == spec->end() || schema->is_null()) {
    text = "{}";  // OpenAI allows leaving it out: any JSON value
  } else if (absl::Status st = SchemaText("response_format.json_schema.schema", *schema, text);
             !st.ok()) {
    return st;
  }
  s.set_json_schema(text);
  return absl::OkStatus();
}

absl::Status StructuredOutputs(const json& v, v1::SamplingParams& s, int& count,
                               std::vector<std::string>& names) {
  if (!v.is_object()) return Invalid("structured_outputs must be an object");
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it->is_null()) continue;
    const std::string path = absl::StrCat("structured_outputs.", it.key());
    std::string text;
    if (it.key() == "json") {
      if (absl::Status st = SchemaText(path, *it, text); !st.ok()) return st;
      s.set_json_schema(text);
    } else if (it.key() == "regex") {
      if (absl::Status st = StringField(path, *it, text); !st.ok()) return st;
      s.set_regex(text);
    } else if (it.key() == "grammar") {
      if (absl::Status st = StringField(path, *it, text); !st.ok()) return st;
      s.set_grammar(text);
    } else if (it.key() == "choice") {
      if (absl::Status st = Choices(path, *it, s); !st.ok()) return st;
    } else if (it.key() == "json_object") {
      if (!it->is_boolean()) return Invalid(absl::StrCat(path, " must be a boolean"));
      if (!it->get<bool>()) continue;
      s.set_json_object(true);
    } else if (it.key() == "disable_any_whitespace" || it.key() == "disable_fallback" ||
               it.key() == "disable_additional_properties" || it.key() == "whitespace_pattern") {
      continue;  // vLLM's tuning knobs: nothing to tune here
    } else {
      return Invalid(absl::StrCat(path, " is not supported (json, regex, choice, grammar, "
                                        "json_object are)"));
    }
    ++count;
    names.push_back(path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseOpenAiConstraint(const std::function<const json*(const std::string&)>& get,
                                   v1::SamplingParams& s, std::string* field) {
  int count = 0;
  std::vector<std::string> names;
  auto note = [&](const char* name) {
    ++count;
    names.push_back(name);
  };
  if (const json* v = get("response_format")) {
    bool set = false;
    if (absl::Status st = ResponseFormat(*v, s, set); !st.ok()) return st;
    if (set) note("response_format");
  }
  std::string text;
  if (const json* v = get("guided_json")) {
    if (absl::Status st = SchemaText("guided_json", *v, text); !st.ok()) return st;
    s.set_json_schema(text);
    note("guided_json");
  }
  if (const json* v = get("guided_regex")) {
    if (absl::Status st = StringField("guided_regex", *v, text); !st.ok()) return st;
    s.set_regex(text);
    note("guided_regex");
  }
  if (const json* v = get("guided_grammar")) {
    if (absl::Status st = StringField("guided_grammar", *v, text); !st.ok()) return st;
    s.set_grammar(text);
    note("guided_grammar");
  }
  if (const json* v = get("guided_choice")) {
    if (absl::Status st = Choices("guided_choice", *v, s); !st.ok()) return st;
    note("guided_choice");
  }
  // Accepted and ignored: which library vLLM should use, and its whitespace.
  get("guided_decoding_backend");
  get("guided_whitespace_pattern");
  if (const json* v = get("structured_outputs")) {
    if (absl::Status st = StructuredOutputs(*v, s, count, names); !st.ok()) return st;
  }
  if (count > 1) {
    return Invalid(absl::StrCat(names[1], ": only one structured-output constraint may be given, got ",
                                absl::StrJoin(names, " and ")));
  }
  if (count == 1) *field = names[0];
  return absl::OkStatus();
}

}  // namespace kvserve::http
