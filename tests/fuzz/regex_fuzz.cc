// libFuzzer target: a regular expression to GBNF, then the GBNF through the
// grammar compiler and matcher. A regex is refused with INVALID_ARGUMENT or
// becomes a grammar that parses (only the size limits may stop it) and runs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/pushdown.h"
#include "engine/grammar/regex_to_gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view regex(reinterpret_cast<const char*>(data), size);
  auto gbnf = kvserve::grammar::RegexToGbnf(regex);
  if (!gbnf.ok()) {
    if (gbnf.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  auto grammar = kvserve::grammar::ParseGbnf(*gbnf);
  if (!grammar.ok()) {
    if (grammar.status().code() == absl::StatusCode::kResourceExhausted) return 0;
    std::fprintf(stderr, "converter output does not parse: %s\n%s\n",
                 std::string(grammar.status().message()).c_str(), gbnf->c_str());
    std::abort();
  }
  // The regex's own text as input: it often matches itself in part.
  kvserve::grammar::Pushdown automaton(*grammar, 1 << 16);
  int32_t state = automaton.Start();
  for (char c : regex.substr(0, 256)) {
    state = automaton.Step(state, static_cast<uint8_t>(c));
    if (state == kvserve::grammar::kDeadState) break;
  }
  return 0;
}
