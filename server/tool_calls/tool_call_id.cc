#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <random>

#include "server/tool_calls/tool_call.h"

namespace kvserve::tool_calls {

std::string NewToolCallId() {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  constexpr int kAlphabetSize = sizeof(kAlphabet) - 1;
  constexpr int kUnbiasedLimit = 256 - 256 % kAlphabetSize;  // no modulo bias
  std::string id = "call_";
  const size_t want = id.size() + kToolCallIdRandomChars;
  uint8_t bytes[48];
  while (id.size() < want) {
    size_t filled = 0;
    while (filled < sizeof(bytes)) {
      const ssize_t got = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
      if (got > 0) {
        filled += static_cast<size_t>(got);
      } else if (got < 0 && errno != EINTR) {
        std::random_device device;
        for (; filled < sizeof(bytes); ++filled) bytes[filled] = static_cast<uint8_t>(device());
      }
    }
    for (uint8_t b : bytes) {
      if (b >= kUnbiasedLimit) continue;
      id.push_back(kAlphabet[b % kAlphabetSize]);
      if (id.size() == want) break;
    }
  }
  return id;
}

}  // namespace kvserve::tool_calls
