// Finds a Hugging Face checkpoint's chat template: `chat_template.jinja`
// (what transformers writes since 4.43) wins over `tokenizer_config.json`'s
// `chat_template`, which is a string or a list of named templates (the one
// named "default" is used). The bos/eos strings the template sees come from
// tokenizer_config.json's `bos_token` / `eos_token` (a string or an
// AddedToken object with `content`).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/text/chat_template_source.h"

namespace kvserve {

/// nullopt when the directory has no template; an error when a file that is
/// there cannot be read or has the wrong shape (named with the field).
absl::StatusOr<std::optional<ChatTemplateSource>> ReadChatTemplate(const std::string& dir);

/// A template given by path (--chat_template); errors name the flag.
absl::StatusOr<std::string> ReadChatTemplateFile(const std::string& path);

}  // namespace kvserve
