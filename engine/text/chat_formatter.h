// Turns a conversation into the prompt a chat model was trained on: renders
// the model's chat template (as transformers' apply_chat_template does) and
// encodes the text without adding special tokens, since the template writes
// them itself. Also knows which tokens end the assistant's turn.
// Thread-safe: Format is const and the parsed template is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/chat_template/chat_template.h"
#include "engine/text/chat_template_source.h"
#include "engine/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace kvserve {

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> token_ids;
};

class ChatFormatter {
 public:
  /// Parses the template (a syntax error is INVALID_ARGUMENT naming the
  /// origin). bos/eos strings missing from `source` are the tokenizer's text
  /// of `bos_id` / the first of `eos_ids`.
  static absl::StatusOr<std::unique_ptr<ChatFormatter>> Create(
      const ChatTemplateSource& source, const Tokenizer& tokenizer,
      const std::vector<int32_t>& eos_ids, std::optional<int32_t> bos_id);

  /// `messages`: a JSON array of {"role", "content"} objects; `tools`: a JSON
  /// array or null. A template's raise_exception comes back as
  /// INVALID_ARGUMENT with the template's message (IsTemplateException).
  absl::StatusOr<ChatPrompt> Format(const nlohmann::ordered_json& messages,
                                    bool add_generation_prompt,
                                    const nlohmann::ordered_json* tools) const;

  /// Tokens that end the assistant's turn and are not already EOS ids (e.g.
  /// Llama-3's <|eot_id|> when the EOS is <|end_of_text|>): a chat request
  /// stops on them.
  const std::vector<int32_t>& end_of_turn_token_ids() const { return end_of_turn_ids_; }
  const std::string& origin() const { return origin_; }

 private:
  ChatFormatter(ChatTemplate tmpl, const Tokenizer& tokenizer)
      : template_(std::move(tmpl)), tokenizer_(tokenizer) {}

  ChatTemplate template_;
  const Tokenizer& tokenizer_;
  std::string origin_;
  std::string bos_token_;
  std::string eos_token_;
  std::vector<int32_t> end_of_turn_ids_;
};

}  // namespace kvserve
