#include "client/token_text.h"

#include "absl/strings/str_cat.h"

namespace kvserve {

std::optional<std::string> TokenTexts::Get(int32_t id) {
  if (unavailable_) return std::nullopt;
  if (auto it = cache_.find(id); it != cache_.end()) return it->second;
  absl::StatusOr<std::string> text =
      client_.Detokenize({id}, /*skip_special_tokens=*/false, options_);
  if (!text.ok()) {
    unavailable_ = true;
    return std::nullopt;
  }
  return cache_[id] = *text;
}

std::string QuotedToken(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrCat("\\x", absl::Hex(c, absl::kZeroPad2));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace kvserve
