#include "server/http/openai_request.h"

#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_constraint.h"
#include "server/http/openai_error.h"

namespace kvserve::http {
namespace {

// Ordered: a JSON Schema keeps its properties in the order the client wrote
// (the structured output writes them in that order, as OpenAI does).
using json = nlohmann::ordered_json;

const char* TypeName(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

absl::Status WrongType(const std::string& name, const char* expected, const json& v) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be ", expected, ", got ", TypeName(v)));
}

// Reads a body's fields; `null` counts as absent (clients send it for "unset").
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {}

  const json* Get(const std::string& name) {
    known_.insert(name);
    auto it = body_.find(name);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  absl::Status Number(const std::string& name, std::optional<double>* out) {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_number()) return WrongType(name, "a number", *v);
    *out = v->get<double>();
    return absl::OkStatus();
  }

  absl::Status Integer(const std::string& name, int64_t min, int64_t max,
                       std::optional<int64_t>* out) {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    auto out_of_range = [&](const std::string& got) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be in [", min, ", ", max, "], got ", got));
    };
    // JSON's non-negative integers parse as unsigned.
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(max)) {
      return out_of_range(absl::StrCat(v->get<uint64_t>()));
    }
    if (!v->is_number_integer()) return WrongType(name, "an integer", *v);
    const int64_t x = v->get<int64_t>();
    if (x < min || x > max) return out_of_range(absl::StrCat(x));
    *out = x;
    return absl::OkStatus();
  }

  absl::Status Bool(const std::string& name, std::optional<bool>* out) {
    const json* v = Get(name);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_boolean()) return WrongType(name, "a boolean", *v);
    *out = v->get<bool>();
    return absl::OkStatus();
  }

  std::vector<std::string> Unknown() const {
    std::vector<std::string> unknown;
    for (auto it = body_.begin(); it != body_.end(); ++it) {
      if (!known_.count(it.key())) unknown.push_back(it.key());
    }
    return unknown;
  }

 private:
  const json& body_;
  std::set<std::string> known_;
};

#define KV_RETURN_IF_ERROR_HTTP(expr)              \
  do {                                             \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

absl::Status ParsePrompt(const json& prompt, v1::GenerateRequest& out) {
  if (prompt.is_string()) {
    out.set_text(prompt.get<std::string>());
    return absl::OkStatus();
  }
  if (!prompt.is_array()) return WrongType("prompt", "a string or an array of token ids", prompt);
  if (prompt.size() == 1 && prompt[0].is_string()) {
    out.set_text(prompt[0].get<std::string>());
    return absl::OkStatus();
  }
  if (!prompt.empty() && (prompt[0].is_string() || prompt[0].is_array())) {
    return absl::InvalidArgumentError(
        "prompt: a list of several prompts is not supported; send one request per prompt");
  }
  auto* ids = out.mutable_token_ids()->mutable_ids();
  for (size_t i = 0; i < prompt.size(); ++i) {
    const json& id = prompt[i];
    if (!id.is_number_integer() || id.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt[", i, "] must be a token id (an integer), got ", TypeName(id)));
    }
    ids->Add(static_cast<int32_t>(id.get<int64_t>()));
  }
  if (ids->empty()) return absl::InvalidArgumentError("prompt must not be empty");
  return absl::OkStatus();
}

// The roles of OpenAI's chat API. `developer` is OpenAI's newer name for
// `system` and is rendered as one (templates know only the latter).
absl::StatusOr<std::string> ChatRole(const std::string& name, const json& role) {
  if (!role.is_string()) return WrongType(name, "a string", role);
  std::string value = role.get<std::string>();
  if (value == "developer") return std::string("system");
  if (value == "system" || value == "user" || value == "assistant" || value == "tool") {
    return value;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be one of system, user, assistant, tool (or developer), got \"",
                   value.substr(0, 64), value.size() > 64 ? "...\"" : "\""));
}

// An optional string field of a message; null counts as absent.
absl::Status OptionalString(const std::string& name, const json& m, const char* key,
                            std::string* out) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return WrongType(absl::StrCat(name, ".", key), "a string", *it);
  *out = it->get<std::string>();
  return absl::OkStatus();
}

// An assistant's tool_calls ({id, type: "function", function: {name,
// arguments: JSON text}}) and a tool result's tool_call_id and name.
absl::Status ParseToolFields(const std::string& name, const json& m, v1::ChatMessage& message) {
  KV_RETURN_IF_ERROR_HTTP(OptionalString(name, m, "tool_call_id", message.mutable_tool_call_id()));
  KV_RETURN_IF_ERROR_HTTP(OptionalString(name, m, "name", message.mutable_name()));
  auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return absl::OkStatus();
  if (!calls->is_array()) return WrongType(name + ".tool_calls", "an array", *calls);
  for (size_t j = 0; j < calls->size(); ++j) {
    const std::string at = absl::StrCat(name, ".tool_calls[", j, "]");
    const json& call = (*calls)[j];
    if (!call.is_object()) return WrongType(at, "an object", call);
    v1::ToolCall* out = message.add_tool_calls();
    KV_RETURN_IF_ERROR_HTTP(OptionalString(at, call, "id", out->mutable_id()));
    std::string type = "function";
    KV_RETURN_IF_ERROR_HTTP(OptionalString(at, call, "type", &type));
    if (type != "function") return absl::InvalidArgumentError(at + ".type must be \"function\"");
    auto function = call.find("function");
    if (function == call.end() || !function->is_object()) {
      return WrongType(at + ".function", "an object", function == call.end() ? json() : *function);
    }
    KV_RETURN_IF_ERROR_HTTP(
        OptionalString(at + ".function", *function, "name", out->mutable_name()));
    if (out->name().empty()) return absl::InvalidArgumentError(at + ".function.name is required");
    auto args = function->find("arguments");
    if (args != function->end() && args->is_object()) {
      out->set_arguments(args->dump());  // some clients send the object itself
    } else {
      KV_RETURN_IF_ERROR_HTTP(
          OptionalString(at + ".function", *function, "arguments", out->mutable_arguments()));
      const json parsed = json::parse(out->arguments().empty() ? "{}" : out->arguments(), nullptr,
                                      /*allow_exceptions=*/false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        return absl::InvalidArgumentError(at +
                                          ".function.arguments must be the JSON text of an object");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseMessages(const json& messages, v1::ChatRequest& out) {
  if (!messages.is_array()) return WrongType("messages", "an array of messages", messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string name = absl::StrCat("messages[", i, "]");
    const json& m = messages[i];
    if (!m.is_object()) return WrongType(name, "an object", m);
    v1::ChatMessage* message = out.add_messages();
    auto role = m.find("role");
    absl::StatusOr<std::string> role_name =
        ChatRole(name + ".role", role == m.end() ? json() : *role);
    if (!role_name.ok()) return role_name.status();
    message->set_role(*std::move(role_name));
    KV_RETURN_IF_ERROR_HTTP(ParseToolFields(name, m, *message));
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) continue;  // e.g. an assistant's tool call
    if (content->is_string()) {
      message->set_content(content->get<std::string>());
      continue;
    }
    if (!content->is_array()) {
      return WrongType(name + ".content", "a string or an array of text parts", *content);
    }
    for (size_t j = 0; j < content->size(); ++j) {
      const std::string part_name = absl::StrCat(name, ".content[", j, "]");
      const json& part = (*content)[j];
      if (!part.is_object()) return WrongType(part_name, "an object", part);
      auto type = part.find("type");
      if (type == part.end() || *type != "text") {
        return absl::InvalidArgumentError(absl::StrCat(
            part_name, ".type must be \"text\" (only text parts are supported)"));
      }
      auto text = part.find("text");
      if (text == part.end() || !text->is_string()) {
        return WrongType(part_name + ".text", "a string", text == part.end() ? json() : *text);
      }
      message->mutable_content()->append(text->get<std::string>());
    }
  }
  return absl::OkStatus();
}

absl::Status ParseStop(const json* stop, v1::StoppingCriteria& out) {
  if (stop == nullptr) return absl::OkStatus();
  if (stop->is_string()) {
    out.add_stop(stop->get<std::string>());
    return absl::OkStatus();
  }
  if (!stop->is_array()) return WrongType("stop", "a string or an array of strings", *stop);
  for (size_t i = 0; i < stop->size(); ++i) {
    if (!(*stop)[i].is_string()) return WrongType(absl::StrCat("stop[", i, "]"), "a string", (*stop)[i]);
    out.add_stop((*stop)[i].get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ParseSampling(Fields& f, OpenAiRequest& r) {
  v1::SamplingParams& s = *r.generate.mutable_sampling();
  std::optional<double> x;
  for (const auto& [name, setter] :
       std::initializer_list<std::pair<const char*, void (v1::SamplingParams::*)(float)>>{
           {"temperature", &v1::SamplingParams::set_temperature},
           {"top_p", &v1::SamplingParams::set_top_p},
           {"presence_penalty", &v1::SamplingParams::set_presence_penalty},
           {"frequency_penalty", &v1::SamplingParams::set_frequency_penalty},
           {"repetition_penalty", &v1::SamplingParams::set_repetition_penalty},
           {"min_p", &v1::SamplingParams::set_min_p}}) {
    x.reset();
    KV_RETURN_IF_ERROR_HTTP(f.Number(name, &x));
    if (x) (s.*setter)(static_cast<float>(*x));
  }
  std::optional<int64_t> i;
  KV_RETURN_IF_ERROR_HTTP(f.Integer("top_k", -1, std::numeric_limits<int32_t>::max(), &i));
  if (i) s.set_top_k(*i < 0 ? 0 : static_cast<int32_t>(*i));  // -1: off, as in vLLM
  i.reset();
  KV_RETURN_IF_ERROR_HTTP(f.Integer("seed", 0, std::numeric_limits<int64_t>::max(), &i));
  if (i) s.set_seed(static_cast<uint64_t>(*i));
  i.reset();
  KV_RETURN_IF_ERROR_HTTP(f.Integer("min_tokens", 0, std::numeric_limits<uint32_t>::max(), &i));
  if (i) s.set_min_new_tokens(static_cast<uint32_t>(*i));
  i.reset();
  if (r.endpoint == Endpoint::kCompletions) {
    // Completions: logprobs is the number of alternatives (0: the sampled token's only).
    KV_RETURN_IF_ERROR_HTTP(f.Integer("logprobs", 0, std::numeric_limits<uint32_t>::max(), &i));
    if (i) {
      r.logprobs = true;
      s.set_logprobs(static_cast<uint32_t>(*i));
    }
  } else {
    std::optional<bool> wanted;
    KV_RETURN_IF_ERROR_HTTP(f.Bool("logprobs", &wanted));
    KV_RETURN_IF_ERROR_HTTP(
        f.Integer("top_logprobs", 0, std::numeric_limits<uint32_t>::max(), &i));
    if (i && !wanted.value_or(false)) {
      return absl::InvalidArgumentError("top_logprobs needs logprobs: true");
    }
    if (wanted.value_or(false)) {
      r.logprobs = true;
      s.set_logprobs(static_cast<uint32_t>(i.value_or(0)));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseStopping(Fields& f, OpenAiRequest& r) {
  v1::StoppingCriteria& st = *r.generate.mutable_stopping();
  std::optional<int64_t> max_tokens;
  const int64_t max = std::numeric_limits<uint32_t>::max();
  KV_RETURN_IF_ERROR_HTTP(f.Integer("max_tokens", 1, max, &max_tokens));
  std::optional<int64_t> max_completion;
  KV_RETURN_IF_ERROR_HTTP(f.Integer("max_completion_tokens", 1, max, &max_completion));
  if (max_completion) {
    r.max_tokens_name = "max_completion_tokens";
    max_tokens = max_completion;  // OpenAI's newer name wins
  }
  if (max_tokens) st.set_max_new_tokens(static_cast<uint32_t>(*max_tokens));
  KV_RETURN_IF_ERROR_HTTP(ParseStop(f.Get("stop"), st));
  std::optional<bool> ignore_eos;
  KV_RETURN_IF_ERROR_HTTP(f.Bool("ignore_eos", &ignore_eos));
  if (ignore_eos) st.set_ignore_eos(*ignore_eos);
  return absl::OkStatus();
}

// tools (kept as JSON text, checked with the gRPC API's in tool_choice.cc),
// tool_choice and parallel_tool_calls.
absl::Status ParseTools(Fields& f, OpenAiRequest& r) {
  if (const json* tools = f.Get("tools")) {
    if (!tools->is_array()) return WrongType("tools", "an array of tool definitions", *tools);
    if (!tools->empty()) r.chat.set_tools_json(tools->dump());
  }
  if (const json* choice = f.Get("tool_choice")) {
    v1::ToolChoice* out = r.chat.mutable_tool_choice();
    if (choice->is_string()) {
      out->set_mode(choice->get<std::string>());
    } else if (choice->is_object()) {
      auto type = choice->find("type");
      if (type == choice->end() || *type != "function") {
        return absl::InvalidArgumentError("tool_choice.type must be \"function\"");
      }
      auto function = choice->find("function");
      const json* name = nullptr;
      if (function != choice->end() && function->is_object()) {
        auto it = function->find("name");
        if (it != function->end()) name = &*it;
      }
      if (name == nullptr || !name->is_string()) {
        return absl::InvalidArgumentError("tool_choice.function.name is required (a string)");
      }
      out->set_function_name(name->get<std::string>());
    } else {
      return WrongType("tool_choice",
                       "\"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                       "\"function\": {\"name\": ...}}",
                       *choice);
    }
  }
  std::optional<bool> parallel;
  KV_RETURN_IF_ERROR_HTTP(f.Bool("parallel_tool_calls", &parallel));
  if (parallel) r.chat.set_parallel_tool_calls(*parallel);
  return absl::OkStatus();
}

// OpenAI's parameters that kvserve does not implement and that would change
// what comes back: refused, not silently ignored. (user, metadata, store,
// service_tier, prediction and the like do not change the output and are
// accepted.)
absl::Status RefuseUnsupported(Fields& f, OpenAiRequest& r) {
  const bool completions = r.endpoint == Endpoint::kCompletions;
  if (const json* bias = f.Get("logit_bias")) {
    if (!bias->is_object()) return WrongType("logit_bias", "an object", *bias);
    if (!bias->empty()) return UnsupportedParameter("logit_bias is not supported");
  }
  if (completions) {
    if (const json* suffix = f.Get("suffix")) {
      if (!suffix->is_string()) return WrongType("suffix", "a string", *suffix);
      if (!suffix->get<std::string>().empty()) {
        return UnsupportedParameter("suffix is not supported (no fill-in-the-middle)");
      }
    }
    std::optional<int64_t> best_of;
    KV_RETURN_IF_ERROR_HTTP(f.Integer("best_of", 1, kMaxChoices, &best_of));
    if (best_of && *best_of != r.n) {
      return UnsupportedParameter(
          absl::StrCat("best_of (", *best_of, ") other than n (", r.n,
                       ") is not supported: every choice generated is returned; drop best_of"));
    }
    std::optional<bool> echo;
    KV_RETURN_IF_ERROR_HTTP(f.Bool("echo", &echo));
    r.echo = echo.value_or(false);
    if (r.echo && r.logprobs) {
      return UnsupportedParameter(
          "echo with logprobs is not supported: the prompt's log-probabilities are not "
          "computed");
    }
    return absl::OkStatus();
  }
  for (const char* name : {"functions", "function_call", "audio", "web_search_options",
                           "reasoning_effort", "verbosity"}) {
    if (f.Get(name) != nullptr) {
      return UnsupportedParameter(absl::StrCat(name, " is not supported"));
    }
  }
  if (const json* modalities = f.Get("modalities")) {
    if (*modalities != json::array({"text"})) {
      return UnsupportedParameter("modalities other than [\"text\"] are not supported");
    }
  }
  return absl::OkStatus();
}

}  // namespace

void ApplyHttpSamplingDefaults(const SamplingDefaults& model, v1::SamplingParams& s) {
  if (!s.has_temperature()) s.set_temperature(model.temperature.value_or(1.f));
  if (!s.has_top_p() && model.top_p) s.set_top_p(*model.top_p);
  if (!s.has_top_k() && model.top_k) s.set_top_k(*model.top_k);
  if (!s.has_min_p() && model.min_p) s.set_min_p(*model.min_p);
  if (!s.has_repetition_penalty() && model.repetition_penalty) {
    s.set_repetition_penalty(*model.repetition_penalty);
  }
}

absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(Endpoint endpoint, std::string_view body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError("body: the request body is not valid JSON");
  }
  if (!parsed.is_object()) return WrongType("body", "a JSON object", parsed);
  OpenAiRequest r;
  r.endpoint = endpoint;
  Fields f(parsed);
  if (const json* model = f.Get("model")) {
    if (!model->is_string()) return WrongType("model", "a string", *model);
    r.model = model->get<std::string>();
  }
  if (endpoint == Endpoint::kCompletions) {
    const json* prompt = f.Get("prompt");
    if (prompt == nullptr) return absl::InvalidArgumentError("prompt is required");
    KV_RETURN_IF_ERROR_HTTP(ParsePrompt(*prompt, r.generate));
  } else {
    const json* messages = f.Get("messages");
    if (messages == nullptr) return absl::InvalidArgumentError("messages is required");
    KV_RETURN_IF_ERROR_HTTP(ParseMessages(*messages, r.chat));
    KV_RETURN_IF_ERROR_HTTP(ParseTools(f, r));
  }
  std::optional<int64_t> n;
  KV_RETURN_IF_ERROR_HTTP(f.Integer("n", 1, kMaxChoices, &n));
  if (n) r.n = static_cast<int>(*n);
  std::optional<bool> stream;
  KV_RETURN_IF_ERROR_HTTP(f.Bool("stream", &stream));
  r.stream = stream.value_or(false);
  if (const json* options = f.Get("stream_options")) {
    if (!options->is_object()) return WrongType("stream_options", "an object", *options);
    auto usage = options->find("include_usage");
    if (usage != options->end() && !usage->is_null()) {
      if (!usage->is_boolean()) {
        return WrongType("stream_options.include_usage", "a boolean", *usage);
      }
      r.include_usage = usage->get<bool>();
    }
  }
  KV_RETURN_IF_ERROR_HTTP(ParseSampling(f, r));
  KV_RETURN_IF_ERROR_HTTP(ParseOpenAiConstraint(
      [&f](const std::string& name) { return f.Get(name); }, *r.generate.mutable_sampling(),
      &r.constraint_field));
  KV_RETURN_IF_ERROR_HTTP(ParseStopping(f, r));
  KV_RETURN_IF_ERROR_HTTP(RefuseUnsupported(f, r));
  r.unknown_fields = f.Unknown();
  return r;
}

}  // namespace kvserve::http
