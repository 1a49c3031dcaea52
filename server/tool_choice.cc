#include "server/tool_choice.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using Json = nlohmann::ordered_json;
using tool_calls::ToolCallMode;

bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

std::string Quoted(const std::string& s) {
  return absl::StrCat("\"", s.substr(0, 64), s.size() > 64 ? "...\"" : "\"");
}

// tools_json → the parsed tools, each checked as OpenAI checks them.
absl::StatusOr<Json> ParseTools(const std::string& tools_json, const std::string& field) {
  Json tools = Json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
  if (tools.is_discarded() || !tools.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must be a JSON array of tool definitions"));
  }
  if (tools.size() > kMaxTools) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", tools.size(), " tools, the limit is ", kMaxTools));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = absl::StrCat(field, "[", i, "]");
    const Json& tool = tools[i];
    if (!tool.is_object()) return absl::InvalidArgumentError(at + " must be an object");
    auto type = tool.find("type");
    if (type == tool.end() || *type != "function") {
      return absl::InvalidArgumentError(at + ".type must be \"function\"");
    }
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) {
      return absl::InvalidArgumentError(at + ".function must be an object");
    }
    auto name = function->find("name");
    if (name == function->end() || !name->is_string()) {
      return absl::InvalidArgumentError(at + ".function.name is required (a string)");
    }
    const std::string n = name->get<std::string>();
    if (!ValidFunctionName(n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".function.name must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -, got ",
          Quoted(n)));
    }
    if (!names.insert(n).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".function.name ", Quoted(n), " is defined twice"));
    }
    auto params = function->find("parameters");
    if (params != function->end() && !params->is_null()) {
      if (!params->is_object()) {
        return absl::InvalidArgumentError(at + ".function.parameters must be a JSON Schema object");
      }
      auto params_type = params->find("type");
      if (params_type != params->end() && *params_type != "object") {
        return absl::InvalidArgumentError(
            at + ".function.parameters must describe an object (\"type\": \"object\")");
      }
    }
  }
  return tools;
}

// A function's parameters schema ({"type": "object"} when it declares none).
Json ParametersOf(const Json& tool) {
  const Json& function = tool["function"];
  auto params = function.find("parameters");
  if (params == function.end() || params->is_null()) return Json{{"type", "object"}};
  return *params;
}

}  // namespace

absl::StatusOr<ToolCallSetup> PrepareToolCalls(const ChatAccess& chat, v1::ChatRequest& request,
                                               std::string_view tools_field) {
  const std::string field(tools_field);
  Json tools = Json::array();
  if (!request.tools_json().empty()) {
    absl::StatusOr<Json> parsed = ParseTools(request.tools_json(), field);
    if (!parsed.ok()) return parsed.status();
    tools = *std::move(parsed);
  }
  ToolCallSetup setup;
  const v1::ToolChoice& choice = request.tool_choice();
  std::string mode = "auto";
  if (choice.choice_case() == v1::ToolChoice::kMode) {
    mode = choice.mode();
    if (mode != "auto" && mode != "none" && mode != "required") {
      return absl::InvalidArgumentError(
          absl::StrCat("tool_choice must be \"none\", \"auto\", \"required\" or a function, got ",
                       Quoted(mode)));
    }
  } else if (choice.choice_case() == v1::ToolChoice::kFunctionName) {
    mode.clear();
  }
  const bool chose = choice.choice_case() != v1::ToolChoice::CHOICE_NOT_SET;
  if (tools.empty()) {
    // OpenAI refuses a choice without tools ("none" aside: nothing to refuse).
    if (chose && mode != "none") {
      return absl::InvalidArgumentError(
          absl::StrCat("tool_choice needs tools: ", field, " is empty"));
    }
    return setup;
  }
  if (mode == "none") return setup;  // the tools are not shown: the model cannot call them
  setup.tools_json = request.tools_json();
  if (mode == "auto") {
    setup.plan = {ToolCallMode::kParse, chat.tool_call_format, ""};
    return setup;
  }

  // "required" or a named function: the output is constrained to a call.
  v1::SamplingParams* sampling = request.mutable_sampling();
  if (sampling->constraint_case() != v1::SamplingParams::CONSTRAINT_NOT_SET) {
    return absl::InvalidArgumentError(
        "tool_choice \"required\" or a named function cannot be combined with a constraint of "
        "the request's own (response_format, guided_*, structured_outputs, "
        "sampling.constraint): the calls are the constraint");
  }
  Json schema;
  if (mode == "required") {
    Json any_of = Json::array();
    for (const Json& tool : tools) {
      any_of.push_back(
          {{"type", "object"},
           {"properties",
            {{"name", {{"const", tool["function"]["name"]}}}, {"parameters", ParametersOf(tool)}}},
           {"required", {"name", "parameters"}},
           {"additionalProperties", false}});
    }
    schema = {{"type", "array"}, {"items", {{"anyOf", std::move(any_of)}}}, {"minItems", 1}};
    if (request.has_parallel_tool_calls() && !request.parallel_tool_calls()) {
      schema["maxItems"] = 1;
    }
    setup.plan = {ToolCallMode::kRequired, chat.tool_call_format, ""};
  } else {
    const std::string& name = choice.function_name();
    const Json* tool = nullptr;
    for (const Json& t : tools) {
      if (t["function"]["name"] == name) tool = &t;
    }
    if (tool == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tool_choice names the function ", Quoted(name), ", which is not one of ", field));
    }
    schema = ParametersOf(*tool);
    setup.plan = {ToolCallMode::kNamed, chat.tool_call_format, name};
  }
  sampling->set_json_schema(schema.dump());
  return setup;
}

}  // namespace kvserve
