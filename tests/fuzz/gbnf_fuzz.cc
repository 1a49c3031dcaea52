// libFuzzer target: a GBNF grammar, then the rest of the input run through
// its automaton. The input is split at the first NUL: before it the grammar,
// after it bytes to match and a token mask to compute at every step, each
// checked token by token against advancing the token's bytes (abort on a
// difference). No input may crash, hang (every closure terminates: left
// recursion refused, tail calls reuse their return point) or blow past the
// node limit unnoticed.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/compiled_constraint.h"
#include "engine/grammar/gbnf.h"

namespace {

std::shared_ptr<const kvserve::grammar::TokenVocabulary> Vocabulary() {
  static auto* v = [] {
    std::vector<std::string> tokens = {"", "\"", "{", "}", "[", "]", ",", ":", " ", "\n",
                                       "true", "null", "\xC3\xA9", "\xE2\x82", "\xAC"};
    for (int c = 32; c < 127; ++c) tokens.push_back(std::string(1, char(c)));
    for (int c = 0x80; c < 0x100; c += 7) tokens.push_back(std::string(1, char(c)));
    for (const char* w : {"ab", "abc", "12", "123", "\":", "{\"", "\",", "  ", "\\n"}) {
      tokens.push_back(w);
    }
    return new std::shared_ptr<const kvserve::grammar::TokenVocabulary>(
        std::make_shared<kvserve::grammar::TokenVocabulary>(tokens));
  }();
  return *v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view bytes = split == std::string_view::npos ? "" : input.substr(split + 1);
  kvserve::grammar::GbnfLimits limits;
  limits.max_elements = 1 << 14;
  auto grammar = kvserve::grammar::ParseGbnf(text, limits);
  if (!grammar.ok()) return 0;
  kvserve::grammar::CompiledConstraint c(*grammar, Vocabulary(), "fuzz");
  std::vector<uint32_t> mask(c.vocabulary().mask_words());
  int32_t state = c.Start();
  const kvserve::grammar::TokenVocabulary& v = c.vocabulary();
  for (size_t i = 0; i <= bytes.size() && i < 64 && state >= 0; ++i) {
    std::fill(mask.begin(), mask.end(), 0u);
    c.OrMask(state, mask.data());
    // The invariant the sampler relies on: a token is in the mask exactly
    // when the grammar can take all of its bytes from this state (checked at
    // the first states, where most inputs still are).
    for (int32_t id = 0; i < 4 && id < v.size(); ++id) {  // the first states: keeps it fast
      const bool allowed = (mask[id >> 5] >> (id & 31)) & 1u;
      const bool takes = !v.bytes(id).empty() &&
                         c.AdvanceBytes(state, v.bytes(id)) != kvserve::grammar::kDeadState;
      if (allowed != takes) std::abort();
    }
    c.Accepting(state);
    if (i < bytes.size()) state = c.AdvanceBytes(state, bytes.substr(i, 1));
  }
  return 0;
}
