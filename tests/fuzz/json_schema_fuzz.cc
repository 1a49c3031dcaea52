// libFuzzer target: JSON Schema to GBNF, then the GBNF through the grammar
// compiler and matcher. A schema is refused with INVALID_ARGUMENT or becomes
// a grammar that parses (only the size limits may stop it) and runs; no
// input may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/pushdown.h"

namespace {

void RunGrammar(const std::string& gbnf, std::string_view probe) {
  auto grammar = kvserve::grammar::ParseGbnf(gbnf);
  if (!grammar.ok()) {
    if (grammar.status().code() == absl::StatusCode::kResourceExhausted) return;
    std::fprintf(stderr, "converter output does not parse: %s\n%s\n",
                 std::string(grammar.status().message()).c_str(), gbnf.c_str());
    std::abort();
  }
  kvserve::grammar::Pushdown automaton(*grammar, 1 << 16);
  for (std::string_view text : {std::string_view("{}"), std::string_view("[1, \"a\"]"),
                                std::string_view("null"), probe.substr(0, 256)}) {
    int32_t state = automaton.Start();
    for (char c : text) {
      state = automaton.Step(state, static_cast<uint8_t>(c));
      if (state == kvserve::grammar::kDeadState) break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view schema(reinterpret_cast<const char*>(data), size);
  auto gbnf = kvserve::grammar::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) {
    if (gbnf.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  RunGrammar(*gbnf, schema);
  return 0;
}
