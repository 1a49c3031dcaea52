// libFuzzer target: a Jinja chat template, parsed, then rendered as
// transformers' apply_chat_template would (a short conversation with a
// system prompt, tools, bos/eos strings). Syntax and runtime errors are
// statuses; the interpreter's limits (docs/chat_templates.md) keep every
// template finite in depth and size.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/text/chat_template/chat_template.h"
#include "nlohmann/json.hpp"

namespace {

const nlohmann::ordered_json& Messages() {
  static const auto* messages = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi <b>there</b> ü"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": "What is 2+2?"}])"));
  return *messages;
}

const nlohmann::ordered_json& Tools() {
  static const auto* tools = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "add", "description": "Adds.",
     "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])"));
  return *tools;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = kvserve::ChatTemplate::Parse(source);
  if (!tmpl.ok()) return 0;
  (void)kvserve::ApplyChatTemplate(*tmpl, Messages(), /*add_generation_prompt=*/true, &Tools(),
                                   "<s>", "</s>");
  return 0;
}
