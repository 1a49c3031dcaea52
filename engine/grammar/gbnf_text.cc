#include "engine/grammar/gbnf_text.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace kvserve::grammar {
namespace {

constexpr CodePointRange kSurrogates{0xD800, 0xDFFF};

}  // namespace

void Normalize(CodePointSet& set) {
  std::sort(set.begin(), set.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  CodePointSet merged;
  for (const CodePointRange& r : set) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  set = std::move(merged);
}

CodePointSet Complement(const CodePointSet& set) {
  CodePointSet out;
  uint32_t next = 0;
  for (const CodePointRange& r : set) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return Subtract(out, {kSurrogates});
}

CodePointSet Subtract(const CodePointSet& set, const CodePointSet& minus) {
  CodePointSet out;
  for (CodePointRange r : set) {
    for (const CodePointRange& m : minus) {
      if (m.hi < r.lo || m.lo > r.hi) continue;
      if (m.lo > r.lo) out.push_back({r.lo, m.lo - 1});
      if (m.hi >= r.hi) {
        r.lo = 1;  // emptied: marked by lo > hi below
        r.hi = 0;
        break;
      }
      r.lo = m.hi + 1;
    }
    if (r.lo <= r.hi) out.push_back(r);
  }
  Normalize(out);
  return out;
}

bool Contains(const CodePointSet& set, uint32_t cp) {
  for (const CodePointRange& r : set) {
    if (cp >= r.lo && cp <= r.hi) return true;
  }
  return false;
}

uint64_t Size(const CodePointSet& set) {
  uint64_t n = 0;
  for (const CodePointRange& r : set) n += uint64_t{r.hi} - r.lo + 1;
  return n;
}

int DecodeUtf8(std::string_view text, size_t pos, uint32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const size_t left = text.size() - pos;
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int len = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (left < static_cast<size_t>(len)) return 0;
  for (int i = 1; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > kMaxCodePoint || (cp >= kSurrogates.lo && cp <= kSurrogates.hi)) return 0;
  return len;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string EscapeCodePoint(uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    default:
      break;
  }
  const bool alnum =
      (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  // In a class only letters, digits and a few harmless marks go unescaped: the
  // metacharacters ] - ^ [ would change its meaning.
  const bool plain =
      in_class
          ? alnum || std::string_view(" _.,:;!?@#%&*+=<>/'`~{}()|$").find(static_cast<char>(cp)) !=
                         std::string_view::npos
          : cp >= 0x20 && cp < 0x7F;
  if (cp < 0x80 && plain) return std::string(1, static_cast<char>(cp));
  if (cp < 0x80) return absl::StrFormat("\\x%02X", cp);
  if (cp <= 0xFFFF) return absl::StrFormat("\\u%04X", cp);
  return absl::StrFormat("\\U%08X", cp);
}

std::string GbnfLiteralOf(const std::vector<uint32_t>& code_points) {
  std::string out = "\"";
  for (uint32_t cp : code_points) out += EscapeCodePoint(cp, /*in_class=*/false);
  out += '"';
  return out;
}

std::string GbnfLiteral(std::string_view text) {
  std::vector<uint32_t> cps;
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = 0;
    const int len = DecodeUtf8(text, pos, cp);
    if (len == 0) {
      cp = static_cast<uint8_t>(text[pos]);
      pos += 1;
    } else {
      pos += len;
    }
    cps.push_back(cp);
  }
  return GbnfLiteralOf(cps);
}

namespace {

std::string ClassBody(const CodePointSet& set) {
  std::string out;
  for (const CodePointRange& r : set) {
    out += EscapeCodePoint(r.lo, /*in_class=*/true);
    if (r.hi == r.lo) continue;
    if (r.hi > r.lo + 1) out += '-';
    out += EscapeCodePoint(r.hi, /*in_class=*/true);
  }
  return out;
}

}  // namespace

std::string GbnfClass(const CodePointSet& set) {
  const std::string positive = ClassBody(set);
  const std::string negative = ClassBody(Complement(set));
  if (!negative.empty() && negative.size() < positive.size()) return "[^" + negative + "]";
  return "[" + positive + "]";
}

}  // namespace kvserve::grammar
