#include "server/http/response_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <random>

namespace kvserve::http {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr int kAlphabetSize = sizeof(kAlphabet) - 1;  // 62
// Bytes at or above this are redrawn, so that every character is equally likely.
constexpr int kUnbiasedLimit = 256 - 256 % kAlphabetSize;  // 248

// getrandom(2) never fails for small requests on Linux >= 3.17 once the
// pool is initialized; std::random_device (also the OS's entropy) stands in
// otherwise rather than failing a request.
void FillRandom(uint8_t* bytes, size_t n) {
  size_t filled = 0;
  while (filled < n) {
    const ssize_t got = getrandom(bytes + filled, n - filled, 0);
    if (got > 0) {
      filled += static_cast<size_t>(got);
    } else if (got < 0 && errno != EINTR) {
      std::random_device device;
      for (; filled < n; ++filled) bytes[filled] = static_cast<uint8_t>(device());
    }
  }
}

}  // namespace

std::string NewResponseId(std::string_view prefix) {
  std::string id(prefix);
  uint8_t bytes[64];
  while (id.size() < prefix.size() + kResponseIdRandomChars) {
    FillRandom(bytes, sizeof(bytes));
    for (uint8_t b : bytes) {
      if (b >= kUnbiasedLimit) continue;
      id.push_back(kAlphabet[b % kAlphabetSize]);
      if (id.size() == prefix.size() + kResponseIdRandomChars) break;
    }
  }
  return id;
}

}  // namespace kvserve::http
