#include "engine/grammar/utf8_ranges.h"

#include <algorithm>

namespace kvserve::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void Split(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  if (lo > hi) return;
  // Never across a surrogate or an encoded-length boundary.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) Split(lo, 0xD7FF, out);
    if (hi > 0xDFFF) Split(0xE000, hi, out);
    return;
  }
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      Split(lo, boundary, out);
      Split(boundary + 1, hi, out);
      return;
    }
  }
  const int n = EncodedLength(lo);
  // Continuation bytes range over 0x80..0xBF only as a whole: split where a
  // lower byte's range would otherwise be partial on one end.
  for (int i = 1; i < n; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        Split(lo, lo | mask, out);
        Split((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        Split(lo, (hi & ~mask) - 1, out);
        Split(hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::vector<uint8_t> a, b;
  AppendUtf8(lo, a);
  AppendUtf8(hi, b);
  ByteRangeSequence seq(a.size());
  for (size_t i = 0; i < a.size(); ++i) seq[i] = {a[i], b[i]};
  out.push_back(std::move(seq));
}

}  // namespace

void AppendUtf8(uint32_t cp, std::vector<uint8_t>& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<uint8_t>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<uint8_t>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<uint8_t>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<uint8_t>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  }
}

std::vector<ByteRangeSequence> Utf8Sequences(uint32_t lo, uint32_t hi) {
  std::vector<ByteRangeSequence> out;
  Split(lo, std::min(hi, kMaxCodePoint), out);
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> NormalizeRanges(
    std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.push_back({lo, hi});
    }
  }
  if (!negate) return merged;
  std::vector<std::pair<uint32_t, uint32_t>> complement;
  uint32_t next = 0;
  for (auto [lo, hi] : merged) {
    if (lo > next) complement.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
  return complement;
}

}  // namespace kvserve::grammar
