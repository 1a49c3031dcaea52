#include "engine/text/token_bytes.h"

#include "absl/strings/match.h"

namespace kvserve {

std::vector<std::string> MidTextTokenBytes(const Tokenizer& tokenizer) {
  const int vocab = tokenizer.vocab_size();
  std::vector<std::string> out(vocab);
  // An anchor whose own text is stable: the token of "a".
  int32_t anchor = -1;
  if (absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode("a", false);
      ids.ok() && !ids->empty()) {
    anchor = ids->back();
  }
  const std::string anchor_text = anchor >= 0 ? tokenizer.Decode({anchor}, false) : "";
  for (int32_t id = 0; id < vocab; ++id) {
    std::string bytes = tokenizer.TokenBytes(id);
    if (bytes.empty() || tokenizer.Decode({id}, /*skip_special_tokens=*/true).empty()) continue;
    if (anchor >= 0) {
      const std::string joined = tokenizer.Decode({anchor, id}, false);
      if (absl::StartsWith(joined, anchor_text)) {
        const std::string_view tail = std::string_view(joined).substr(anchor_text.size());
        if (tail.size() == bytes.size() + 1 && tail[0] == ' ' && tail.substr(1) == bytes) {
          bytes.insert(bytes.begin(), ' ');
        }
      }
    }
    out[id] = std::move(bytes);
  }
  return out;
}

}  // namespace kvserve
