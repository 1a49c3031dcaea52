#include "engine/text/hf/byte_level.h"

#include <array>

namespace kvserve::hf {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  std::array<int, 512> char_to_byte;  // code points < 512 only; -1: none
};

const Tables& GetTables() {
  static const Tables* tables = [] {
    auto* t = new Tables();
    t->char_to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int c = printable ? b : next++;
      AppendUtf8(static_cast<char32_t>(c), &t->byte_to_char[b]);
      t->char_to_byte[c] = b;
    }
    return t;
  }();
  return *tables;
}

}  // namespace

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

char32_t NextCodePoint(absl::string_view text, size_t* pos) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const size_t i = *pos;
  const unsigned char lead = b(i);
  if (lead < 0x80 || i + 1 >= text.size()) {
    *pos += 1;
    return lead;
  }
  if (lead < 0xE0) {
    *pos += 2;
    return ((lead & 0x1F) << 6) | (b(i + 1) & 0x3F);
  }
  if (lead < 0xF0 && i + 2 < text.size()) {
    *pos += 3;
    return ((lead & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  }
  if (i + 3 < text.size()) {
    *pos += 4;
    return ((lead & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) |
           (b(i + 3) & 0x3F);
  }
  *pos += 1;  // truncated sequence (not valid UTF-8): step over one byte
  return lead;
}

const std::string& ByteToChar(unsigned char byte) { return GetTables().byte_to_char[byte]; }

std::string BytesToChars(absl::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char c : text) out += GetTables().byte_to_char[c];
  return out;
}

std::optional<unsigned char> CharToByte(char32_t c) {
  if (c >= 512) return std::nullopt;
  const int b = GetTables().char_to_byte[c];
  if (b < 0) return std::nullopt;
  return static_cast<unsigned char>(b);
}

}  // namespace kvserve::hf
