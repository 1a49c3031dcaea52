// Integer ceiling division, e.g. the KV blocks that hold a number of tokens.
#pragma once

#include <concepts>

namespace kvserve {

/// ⌈a / b⌉ for a ≥ 0 and b > 0.
template <std::integral T>
constexpr T CeilDiv(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace kvserve
