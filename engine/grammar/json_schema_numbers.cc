#include "engine/grammar/json_schema_numbers.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvserve::grammar {
namespace {

std::string Alternatives(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  return absl::StrCat("(", absl::StrJoin(parts, " | "), ")");
}

std::string DigitClass(char lo, char hi) {
  if (lo == hi) return absl::StrCat("\"", std::string(1, lo), "\"");
  return absl::StrCat("[", std::string(1, lo), "-", std::string(1, hi), "]");
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return absl::StrCat("[0-9]{", n, "}");
}

// The digit strings of length a.size() from a to b inclusive (a <= b).
std::string SameLength(std::string_view a, std::string_view b) {
  if (a.empty()) return "";
  if (a == b) return absl::StrCat("\"", std::string(a), "\"");
  const size_t rest = a.size() - 1;
  if (a[0] == b[0]) {
    return absl::StrCat("\"", std::string(a.substr(0, 1)), "\" ",
                        SameLength(a.substr(1), b.substr(1)));
  }
  const bool low_all_zero = a.substr(1).find_first_not_of('0') == std::string_view::npos;
  const bool high_all_nine = b.substr(1).find_first_not_of('9') == std::string_view::npos;
  std::vector<std::string> parts;
  if (!low_all_zero) {
    parts.push_back(absl::StrCat("\"", std::string(a.substr(0, 1)), "\" ",
                                 SameLength(a.substr(1), std::string(rest, '9'))));
  }
  const char first = static_cast<char>(a[0] + (low_all_zero ? 0 : 1));
  const char last = static_cast<char>(b[0] - (high_all_nine ? 0 : 1));
  if (first <= last) {
    std::string part = DigitClass(first, last);
    if (rest > 0) absl::StrAppend(&part, " ", AnyDigits(rest));
    parts.push_back(part);
  }
  if (!high_all_nine) {
    parts.push_back(absl::StrCat("\"", std::string(b.substr(0, 1)), "\" ",
                                 SameLength(std::string(rest, '0'), b.substr(1))));
  }
  return Alternatives(parts);
}

uint64_t PowerOf10(size_t n) {
  uint64_t p = 1;
  for (size_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Decimal integers without leading zeros in [lo, hi]; no hi: up to
// max(kMaxIntegerDigits, digits of lo) digits.
std::string NonNegativeRange(uint64_t lo, std::optional<uint64_t> hi) {
  const size_t lo_digits = std::to_string(lo).size();
  const size_t hi_digits = hi ? std::to_string(*hi).size() : lo_digits;
  std::vector<std::string> parts;
  for (size_t len = lo_digits; len <= hi_digits; ++len) {
    const uint64_t a = len == lo_digits ? lo : PowerOf10(len - 1);
    const uint64_t b = hi && len == hi_digits ? *hi : PowerOf10(len) - 1;
    parts.push_back(SameLength(std::to_string(a), std::to_string(b)));
  }
  const size_t max_digits = std::max<size_t>(kMaxIntegerDigits, lo_digits);
  if (!hi && lo_digits < max_digits) {
    parts.push_back(absl::StrCat("[1-9] [0-9]{", lo_digits, ",", max_digits - 1, "}"));
  }
  return Alternatives(parts);
}

constexpr char kAnyFraction[] = "(\".\" [0-9]{1,16})?";
constexpr char kZeroFraction[] = "(\".\" \"0\"{1,16})?";
constexpr char kNonZeroFraction[] = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";

// Unsigned decimals m = n.f with lo <= m <= hi (each bound possibly
// exclusive; no hi: unbounded), or nullopt when there are none.
std::optional<std::string> Magnitude(NumberBound lo, std::optional<NumberBound> hi) {
  const uint64_t l = static_cast<uint64_t>(lo.value);
  if (hi && hi->value < lo.value) return std::nullopt;
  if (hi && hi->value == lo.value) {
    if (lo.exclusive || hi->exclusive) return std::nullopt;
    return absl::StrCat("\"", l, "\" ", kZeroFraction);
  }
  std::vector<std::string> parts;
  // Integer part l: any fraction, or a non-zero one when l itself is excluded.
  parts.push_back(absl::StrCat("\"", l, "\" ", lo.exclusive ? kNonZeroFraction : kAnyFraction));
  // Integer parts strictly between the bounds: any fraction.
  if (!hi || hi->value - lo.value >= 2) {
    std::optional<uint64_t> top;
    if (hi) top = static_cast<uint64_t>(hi->value - 1);
    parts.push_back(absl::StrCat(NonNegativeRange(l + 1, top), " ", kAnyFraction));
  }
  // Integer part hi: only a zero fraction, when hi is included.
  if (hi && !hi->exclusive) {
    parts.push_back(absl::StrCat("\"", hi->value, "\" ", kZeroFraction));
  }
  return Alternatives(parts);
}

}  // namespace

std::optional<std::string> IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return std::nullopt;
  std::vector<std::string> parts;
  if (!hi || *hi >= 0) {
    const uint64_t from = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> to;
    if (hi) to = static_cast<uint64_t>(*hi);
    parts.push_back(NonNegativeRange(from, to));
  }
  if (!lo || *lo < 0) {
    // -m with m in [max(1, -hi), -lo].
    const uint64_t from = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
    std::optional<uint64_t> to;
    if (lo) to = static_cast<uint64_t>(-*lo);
    parts.push_back(absl::StrCat("\"-\" ", NonNegativeRange(from, to)));
  }
  return Alternatives(parts);
}

std::optional<std::string> NumberRangeGbnf(std::optional<NumberBound> lo,
                                           std::optional<NumberBound> hi) {
  std::vector<std::string> parts;
  // Written without a sign: v >= 0.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    NumberBound from{0, false};
    if (lo && lo->value >= 0) from = *lo;
    if (auto m = Magnitude(from, hi)) parts.push_back(*m);
  }
  // Written "-m": v = -m <= 0, so lo bounds m from above and hi from below.
  if (!lo || lo->value < 0) {
    NumberBound from{0, false};
    if (hi && hi->value <= 0) from = {-hi->value, hi->exclusive};
    std::optional<NumberBound> to;
    if (lo) to = NumberBound{-lo->value, lo->exclusive};
    if (auto m = Magnitude(from, to)) parts.push_back(absl::StrCat("\"-\" ", *m));
  }
  if (parts.empty()) return std::nullopt;
  return Alternatives(parts);
}

}  // namespace kvserve::grammar
