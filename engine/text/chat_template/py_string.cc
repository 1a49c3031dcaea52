#include "engine/text/chat_template/py_string.h"

#include <algorithm>

#include "unicode/uchar.h"
#include "unicode/ustring.h"

namespace kvserve::chat_template {
namespace {

size_t CodepointLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;  // stray continuation byte: one unit, as the input is not UTF-8 anyway
}

uint32_t DecodeAt(std::string_view s, size_t pos, size_t len) {
  unsigned char lead = static_cast<unsigned char>(s[pos]);
  if (len == 1) return lead;
  uint32_t cp = lead & (0xFF >> (len + 1));
  for (size_t i = 1; i < len && pos + i < s.size(); ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  }
  return cp;
}

struct Piece {
  size_t begin;
  size_t end;
  uint32_t cp;
};

std::vector<Piece> Decode(std::string_view s) {
  std::vector<Piece> out;
  for (size_t i = 0; i < s.size();) {
    size_t len = std::min(CodepointLength(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back({i, i + len, DecodeAt(s, i, len)});
    i += len;
  }
  return out;
}

}  // namespace

bool IsPyWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::vector<std::string> SplitCodepoints(std::string_view s) {
  std::vector<std::string> out;
  for (const Piece& p : Decode(s)) out.emplace_back(s.substr(p.begin, p.end - p.begin));
  return out;
}

size_t CountCodepoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<size_t> CodepointOffsets(std::string_view s) {
  std::vector<size_t> out;
  for (const Piece& p : Decode(s)) out.push_back(p.begin);
  out.push_back(s.size());
  return out;
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right) {
  std::vector<Piece> pieces = Decode(s);
  std::vector<uint32_t> strip_set;
  if (chars) {
    for (const Piece& p : Decode(*chars)) strip_set.push_back(p.cp);
  }
  auto strippable = [&](uint32_t cp) {
    if (!chars) return IsPyWhitespace(cp);
    return std::find(strip_set.begin(), strip_set.end(), cp) != strip_set.end();
  };
  size_t first = 0, last = pieces.size();
  if (left) {
    while (first < last && strippable(pieces[first].cp)) ++first;
  }
  if (right) {
    while (last > first && strippable(pieces[last - 1].cp)) --last;
  }
  if (first == last) return "";
  return std::string(s.substr(pieces[first].begin, pieces[last - 1].end - pieces[first].begin));
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        size_t found = s.find(*sep, pos);
        if (found == std::string_view::npos) break;
        out.emplace_back(s.substr(pos, found - pos));
        pos = found + sep->size();
      }
      out.emplace_back(s.substr(pos));
      return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t found = s.rfind(*sep, end - sep->size());
      if (found == std::string_view::npos) break;
      out.emplace_back(s.substr(found + sep->size(), end - found - sep->size()));
      end = found;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  // Runs of whitespace; leading and trailing whitespace give no empty parts.
  std::vector<Piece> pieces = Decode(s);
  if (from_right) {
    std::vector<std::string> parts;
    int64_t i = static_cast<int64_t>(pieces.size()) - 1;
    while (i >= 0) {
      while (i >= 0 && IsPyWhitespace(pieces[i].cp)) --i;
      if (i < 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(s.substr(0, pieces[i].end));
        break;
      }
      int64_t end = i;
      while (i >= 0 && !IsPyWhitespace(pieces[i].cp)) --i;
      parts.emplace_back(s.substr(pieces[i + 1].begin, pieces[end].end - pieces[i + 1].begin));
    }
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  size_t i = 0;
  while (i < pieces.size()) {
    while (i < pieces.size() && IsPyWhitespace(pieces[i].cp)) ++i;
    if (i == pieces.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.emplace_back(s.substr(pieces[i].begin));
      break;
    }
    size_t begin = i;
    while (i < pieces.size() && !IsPyWhitespace(pieces[i].cp)) ++i;
    out.emplace_back(s.substr(pieces[begin].begin, pieces[i - 1].end - pieces[begin].begin));
  }
  return out;
}

std::vector<std::string> PySplitLines(std::string_view s) {
  std::vector<std::string> out;
  std::vector<Piece> pieces = Decode(s);
  size_t line_begin = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    uint32_t cp = pieces[i].cp;
    bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                    cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!is_break) continue;
    out.emplace_back(s.substr(line_begin, pieces[i].begin - line_begin));
    if (cp == '\r' && i + 1 < pieces.size() && pieces[i + 1].cp == '\n') ++i;
    line_begin = pieces[i].end;
  }
  if (line_begin < s.size()) out.emplace_back(s.substr(line_begin));
  return out;
}

std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text,
                      int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::vector<Piece> pieces = Decode(s);
    int64_t done = 0;
    for (const Piece& p : pieces) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      out += s.substr(p.begin, p.end - p.begin);
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t found = s.find(old_text, pos);
    if (found == std::string_view::npos) break;
    out += s.substr(pos, found - pos);
    out += new_text;
    pos = found + old_text.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

// Case mapping is Unicode's full mapping through ICU, as Python's str does
// ("ß".upper() is "SS"); title() and capitalize() follow CPython's loops.
namespace {

std::u16string ToUtf16(std::string_view s) {
  std::u16string out(s.size() + 1, u'\0');
  int32_t length = 0;
  UErrorCode status = U_ZERO_ERROR;
  u_strFromUTF8WithSub(out.data(), static_cast<int32_t>(out.size()), &length, s.data(),
                       static_cast<int32_t>(s.size()), 0xFFFD, nullptr, &status);
  out.resize(U_SUCCESS(status) ? length : 0);
  return out;
}

std::string ToUtf8(const std::u16string& s) {
  std::string out(s.size() * 3 + 1, '\0');
  int32_t length = 0;
  UErrorCode status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &length, s.data(),
              static_cast<int32_t>(s.size()), &status);
  out.resize(U_SUCCESS(status) ? length : 0);
  return out;
}

enum class CaseOp { kUpper, kLower, kTitle };

std::string MapCase(std::string_view s, CaseOp op) {
  std::u16string src = ToUtf16(s);
  // Full case mappings grow a string at most threefold.
  std::u16string dest(src.size() * 3 + 4, u'\0');
  UErrorCode status = U_ZERO_ERROR;
  int32_t length = 0;
  const int32_t capacity = static_cast<int32_t>(dest.size());
  const int32_t src_length = static_cast<int32_t>(src.size());
  switch (op) {
    case CaseOp::kUpper: length = u_strToUpper(dest.data(), capacity, src.data(), src_length, "", &status); break;
    case CaseOp::kLower: length = u_strToLower(dest.data(), capacity, src.data(), src_length, "", &status); break;
    case CaseOp::kTitle:
      length = u_strToTitle(dest.data(), capacity, src.data(), src_length, nullptr, "", &status);
      break;
  }
  if (U_FAILURE(status)) return std::string(s);
  dest.resize(length);
  return ToUtf8(dest);
}

bool IsCased(uint32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_CASED); }

}  // namespace

std::string PyUpper(std::string_view s) { return MapCase(s, CaseOp::kUpper); }
std::string PyLower(std::string_view s) { return MapCase(s, CaseOp::kLower); }

std::string PyCapitalize(std::string_view s) {
  std::vector<Piece> pieces = Decode(s);
  if (pieces.empty()) return "";
  return MapCase(s.substr(0, pieces[0].end), CaseOp::kTitle) +
         MapCase(s.substr(pieces[0].end), CaseOp::kLower);
}

std::string PyTitle(std::string_view s) {
  std::string out;
  bool previous_is_cased = false;
  for (const Piece& p : Decode(s)) {
    std::string_view ch = s.substr(p.begin, p.end - p.begin);
    out += MapCase(ch, previous_is_cased ? CaseOp::kLower : CaseOp::kTitle);
    previous_is_cased = IsCased(p.cp);
  }
  return out;
}

bool PyIsLower(std::string_view s) {
  bool cased = false;
  for (const Piece& p : Decode(s)) {
    UChar32 c = static_cast<UChar32>(p.cp);
    if (u_isUUppercase(c) || u_charType(c) == U_TITLECASE_LETTER) return false;
    cased |= u_isULowercase(c);
  }
  return cased;
}

bool PyIsUpper(std::string_view s) {
  bool cased = false;
  for (const Piece& p : Decode(s)) {
    UChar32 c = static_cast<UChar32>(p.cp);
    if (u_isULowercase(c) || u_charType(c) == U_TITLECASE_LETTER) return false;
    cased |= u_isUUppercase(c);
  }
  return cased;
}

bool PyIsAlpha(std::string_view s) {
  std::vector<Piece> pieces = Decode(s);
  return !pieces.empty() && std::all_of(pieces.begin(), pieces.end(), [](const Piece& p) {
    return (U_GET_GC_MASK(static_cast<UChar32>(p.cp)) & U_GC_L_MASK) != 0;
  });
}

bool PyIsDigit(std::string_view s) {
  std::vector<Piece> pieces = Decode(s);
  return !pieces.empty() && std::all_of(pieces.begin(), pieces.end(), [](const Piece& p) {
    int32_t type = u_getIntPropertyValue(static_cast<UChar32>(p.cp), UCHAR_NUMERIC_TYPE);
    return type == U_NT_DECIMAL || type == U_NT_DIGIT;
  });
}

}  // namespace kvserve::chat_template
