// GBNF for JSON integers and numbers between bounds (JSON Schema's minimum,
// maximum, exclusiveMinimum, exclusiveMaximum): digit-by-digit ranges, so the
// bounds are enforced by the grammar itself rather than checked afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvserve::grammar {

/// Digits allowed in an integer part when nothing bounds it: a model cannot
/// write an endless number, and every int64 bound still fits.
inline constexpr int kMaxIntegerDigits = 16;
/// Bounds beyond ±10^18 are refused: int64 arithmetic stays exact.
inline constexpr int64_t kMaxBoundMagnitude = 1000000000000000000;

struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

/// A GBNF expression for the JSON integers in [lo, hi] (a missing bound is
/// open), or nullopt when none is (lo > hi).
std::optional<std::string> IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

/// A GBNF expression for JSON numbers (integer part, optional fraction, no
/// exponent) between the integral bounds, or nullopt when none is.
std::optional<std::string> NumberRangeGbnf(std::optional<NumberBound> lo,
                                           std::optional<NumberBound> hi);

}  // namespace kvserve::grammar
