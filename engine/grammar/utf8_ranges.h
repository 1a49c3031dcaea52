// Code-point ranges as UTF-8 byte-range sequences, so that a character
// class such as [^"\\] or [α-ω] becomes alternatives over bytes that the
// byte-level matcher can run. Surrogates (U+D800..U+DFFF) are never produced.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace kvserve::grammar {

struct ByteRange {
  uint8_t lo = 0, hi = 0;
};
/// One UTF-8 length's worth of code points: the i-th byte is in ranges[i].
using ByteRangeSequence = std::vector<ByteRange>;

/// Sequences whose union is exactly the UTF-8 encodings of [lo, hi]
/// (inclusive, hi ≤ 0x10FFFF).
std::vector<ByteRangeSequence> Utf8Sequences(uint32_t lo, uint32_t hi);

/// Sorted, merged ranges; complemented over [0, 0x10FFFF] when `negate`.
std::vector<std::pair<uint32_t, uint32_t>> NormalizeRanges(
    std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negate);

/// `cp` as UTF-8 (1 to 4 bytes).
void AppendUtf8(uint32_t cp, std::vector<uint8_t>& out);

}  // namespace kvserve::grammar
