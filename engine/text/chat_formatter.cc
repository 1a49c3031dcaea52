#include "engine/text/chat_formatter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

// End-of-turn markers of the chat formats in use (ChatML, Llama-3, Phi-3,
// Gemma, Mistral/Llama-2, GPT-2 style). A marker counts for a model only when
// its template writes it and its tokenizer has it as one token.
constexpr const char* kTurnMarkers[] = {"<|im_end|>", "<|eot_id|>",      "<|end|>",
                                        "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                                        "</s>",           "<|eom_id|>"};

std::optional<int32_t> SingleToken(const Tokenizer& tokenizer, const std::string& text) {
  if (text.empty()) return std::nullopt;
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, /*add_special_tokens=*/false);
  if (!ids.ok() || ids->size() != 1) return std::nullopt;
  return (*ids)[0];
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChatFormatter>> ChatFormatter::Create(
    const ChatTemplateSource& source, const Tokenizer& tokenizer,
    const std::vector<int32_t>& eos_ids, std::optional<int32_t> bos_id) {
  absl::StatusOr<ChatTemplate> parsed = ChatTemplate::Parse(source.text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chat template from ", source.origin, ": ", parsed.status().message()));
  }
  std::unique_ptr<ChatFormatter> formatter(new ChatFormatter(*std::move(parsed), tokenizer));
  formatter->origin_ = source.origin;
  if (source.bos_token) {
    formatter->bos_token_ = *source.bos_token;
  } else if (bos_id) {
    formatter->bos_token_ = tokenizer.Decode({*bos_id}, /*skip_special_tokens=*/false);
  }
  if (source.eos_token) {
    formatter->eos_token_ = *source.eos_token;
  } else if (!eos_ids.empty()) {
    formatter->eos_token_ = tokenizer.Decode({eos_ids[0]}, /*skip_special_tokens=*/false);
  }

  auto add_turn_end = [&](std::optional<int32_t> id) {
    if (!id) return;
    std::vector<int32_t>& ids = formatter->end_of_turn_ids_;
    if (std::find(eos_ids.begin(), eos_ids.end(), *id) != eos_ids.end()) return;
    if (std::find(ids.begin(), ids.end(), *id) != ids.end()) return;
    ids.push_back(*id);
  };
  add_turn_end(SingleToken(tokenizer, formatter->eos_token_));
  for (const char* marker : kTurnMarkers) {
    if (source.text.find(marker) != std::string::npos) {
      add_turn_end(SingleToken(tokenizer, marker));
    }
  }
  return formatter;
}

absl::StatusOr<ChatPrompt> ChatFormatter::Format(const nlohmann::ordered_json& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::ordered_json* tools) const {
  absl::StatusOr<std::string> text = ApplyChatTemplate(
      template_, messages, add_generation_prompt, tools, bos_token_, eos_token_);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<int32_t>> ids =
      tokenizer_.Encode(*text, /*add_special_tokens=*/false);
  if (!ids.ok()) return ids.status();
  return ChatPrompt{*std::move(text), *std::move(ids)};
}

}  // namespace kvserve
