#include "engine/text/utf8.h"

namespace kvserve {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// How many bytes of `text`, from its start, form a valid prefix of a UTF-8
// sequence (Unicode's "maximal subpart"), and whether that prefix is complete.
int ValidPrefix(absl::string_view text, bool& complete) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  complete = false;
  const unsigned char lead = b(0);
  if (lead < 0x80) {
    complete = true;
    return 1;
  }
  int length;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // continuation byte or invalid lead byte
  }
  int n = 1;
  for (; n < length; ++n) {
    if (n >= static_cast<int>(text.size())) return n;
    const unsigned char c = b(n);
    const unsigned char min = n == 1 ? lo : 0x80, max = n == 1 ? hi : 0xBF;
    if (c < min || c > max) return n;
  }
  complete = true;
  return length;
}

}  // namespace

int Utf8SequenceLength(absl::string_view text) {
  if (text.empty()) return 0;
  bool complete;
  int n = ValidPrefix(text, complete);
  return complete ? n : 0;
}

std::string SanitizeUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    bool complete;
    const int n = ValidPrefix(bytes.substr(i), complete);
    if (complete) {
      out.append(bytes.data() + i, n);
      i += n;
    } else {
      out.append(kReplacement);
      i += n == 0 ? 1 : n;  // one U+FFFD per maximal invalid subpart
    }
  }
  return out;
}

bool EndsWithReplacementChar(absl::string_view text) {
  return text.size() >= 3 && text.substr(text.size() - 3) == kReplacement;
}

}  // namespace kvserve
