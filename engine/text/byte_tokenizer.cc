#include "engine/text/byte_tokenizer.h"

#include "engine/text/utf8.h"

namespace kvserve {

absl::StatusOr<std::vector<int32_t>> ByteTokenizer::Encode(absl::string_view text,
                                                           bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (add_special_tokens) ids.push_back(kBos);
  for (unsigned char c : text) ids.push_back(kByteOffset + c);
  return ids;
}

std::string ByteTokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  return SanitizeUtf8(DecodeRaw(ids, skip_special_tokens));
}

std::string ByteTokenizer::DecodeRaw(absl::Span<const int32_t> ids,
                                     bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id >= kByteOffset && id < kByteOffset + 256) {
      bytes.push_back(static_cast<char>(id - kByteOffset));
    } else if (!skip_special_tokens) {
      if (id == kPad) bytes += "<pad>";
      if (id == kBos) bytes += "<s>";
      if (id == kEos) bytes += "</s>";
    }
  }
  return bytes;
}

}  // namespace kvserve
