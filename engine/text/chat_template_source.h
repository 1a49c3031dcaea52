// Where a model's chat template came from, and the special-token strings the
// template sees as `bos_token` / `eos_token`. Filled by the loaders
// (tokenizer_config.json, chat_template.jinja, GGUF metadata, --chat_template)
// and turned into prompts by ChatFormatter.
#pragma once

#include <optional>
#include <string>

namespace kvserve {

struct ChatTemplateSource {
  std::string text;    // the Jinja source
  std::string origin;  // for messages: "tokenizer_config.json", "gguf", a path
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
};

}  // namespace kvserve
