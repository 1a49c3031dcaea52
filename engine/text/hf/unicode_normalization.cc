#include "engine/text/hf/unicode_normalization.h"

#include <algorithm>
#include <vector>

#include "engine/text/hf/byte_level.h"

namespace kvserve::hf {
namespace {

struct CombiningClassRun {
  char32_t first, last;
  int ccc;
};
struct Decomposition {
  char32_t cp;
  char32_t parts[4];
};
struct Composition {
  char32_t first, second, composite;
};

#include "engine/text/hf/nfc_tables.inc"

// Hangul syllables: S = SBase + (L - LBase) * NCount + (V - VBase) * TCount + (T - TBase).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

int CombiningClass(char32_t c) {
  if (c < 0x300) return 0;
  const auto* end = std::end(kCombiningClasses);
  const auto* it = std::upper_bound(std::begin(kCombiningClasses), end, c,
                                    [](char32_t v, const CombiningClassRun& r) {
                                      return v < r.first;
                                    });
  if (it == std::begin(kCombiningClasses)) return 0;
  --it;
  return c <= it->last ? it->ccc : 0;
}

void Decompose(char32_t c, std::vector<char32_t>* out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const int s = c - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = std::end(kDecompositions);
  const auto* it = std::lower_bound(std::begin(kDecompositions), end, c,
                                    [](const Decomposition& d, char32_t v) { return d.cp < v; });
  if (it == end || it->cp != c) {
    out->push_back(c);
    return;
  }
  for (char32_t part : it->parts) {
    if (part != 0) out->push_back(part);
  }
}

// The primary composite of a pair, or 0.
char32_t Compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto* end = std::end(kCompositions);
  const auto* it = std::lower_bound(std::begin(kCompositions), end, std::make_pair(first, second),
                                    [](const Composition& c, std::pair<char32_t, char32_t> v) {
                                      return std::make_pair(c.first, c.second) < v;
                                    });
  if (it == end || it->first != first || it->second != second) return 0;
  return it->composite;
}

bool IsAscii(absl::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Decomposed and canonically ordered code points.
std::vector<char32_t> DecomposeAll(absl::string_view text) {
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) Decompose(NextCodePoint(text, &pos), &chars);
  // Stable-sort each run of non-starters by combining class.
  for (size_t i = 0; i < chars.size();) {
    if (CombiningClass(chars[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < chars.size() && CombiningClass(chars[j]) != 0) ++j;
    std::stable_sort(chars.begin() + i, chars.begin() + j, [](char32_t a, char32_t b) {
      return CombiningClass(a) < CombiningClass(b);
    });
    i = j;
  }
  return chars;
}

std::string Encode(const std::vector<char32_t>& chars) {
  std::string out;
  out.reserve(chars.size());
  for (char32_t c : chars) AppendUtf8(c, &out);
  return out;
}

}  // namespace

std::string ToNfd(absl::string_view text) {
  if (IsAscii(text)) return std::string(text);
  return Encode(DecomposeAll(text));
}

std::string ToNfc(absl::string_view text) {
  if (IsAscii(text)) return std::string(text);
  std::vector<char32_t> chars = DecomposeAll(text);
  if (chars.empty()) return "";
  // Canonical composition (UAX #15): a character joins the last starter unless
  // a character between them has class 0 or a class not below its own.
  size_t starter = 0, write = 1;
  int last_class = CombiningClass(chars[0]) == 0 ? 0 : 256;
  for (size_t read = 1; read < chars.size(); ++read) {
    const char32_t c = chars[read];
    const int c_class = CombiningClass(c);
    const char32_t composite = Compose(chars[starter], c);
    if (composite != 0 && (last_class < c_class || last_class == 0)) {
      chars[starter] = composite;
      continue;
    }
    if (c_class == 0) starter = write;
    last_class = c_class;
    chars[write++] = c;
  }
  chars.resize(write);
  return Encode(chars);
}

}  // namespace kvserve::hf
