// kvserve-grammar-check: compiles a constraint and says which candidate texts
// its grammar accepts, for the differential test against Python's
// jsonschema (tests/grammar_schema_test.py) and for looking at a grammar.
//
//   kvserve-grammar-check --json_schema FILE | --regex TEXT | --gbnf FILE [--print] [--raw]
//
// stdin: one candidate per line, as a JSON string literal ("{\"a\": 1}"),
// or with --raw each line as it is; stdout: "match" or "no-match" per line.
// --print writes the GBNF first.
// A constraint that does not compile: its error on stderr, exit status 2.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/pushdown.h"
#include "engine/grammar/regex_to_gbnf.h"
#include "nlohmann/json.hpp"

namespace {

int Usage() {
  std::cerr << "usage: kvserve-grammar-check --json_schema FILE | --regex TEXT | --gbnf FILE "
               "[--print] [--raw] < candidates (one per line: a JSON string, or raw text "
               "with --raw)\n";
  return 64;
}

bool ReadFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvserve::grammar;
  std::string mode, arg;
  bool print = false;
  bool raw = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--print") {
      print = true;
    } else if (flag == "--raw") {
      raw = true;
    } else if ((flag == "--json_schema" || flag == "--regex" || flag == "--gbnf") && i + 1 < argc) {
      mode = flag.substr(2);
      arg = argv[++i];
    } else {
      return Usage();
    }
  }
  if (mode.empty()) return Usage();
  absl::StatusOr<std::string> gbnf;
  std::string text;
  if (mode == "regex") {
    gbnf = RegexToGbnf(arg);
  } else if (!ReadFile(arg, text)) {
    std::cerr << "cannot read " << arg << "\n";
    return 2;
  } else {
    gbnf = mode == "gbnf" ? absl::StatusOr<std::string>(text) : JsonSchemaToGbnf(text);
  }
  if (!gbnf.ok()) {
    std::cerr << gbnf.status().message() << "\n";
    return 2;
  }
  if (print) std::cout << *gbnf;
  auto grammar = ParseGbnf(*gbnf);
  if (!grammar.ok()) {
    std::cerr << grammar.status().message() << "\n";
    return 2;
  }
  Pushdown automaton(*grammar);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::string text = line;
    if (!raw) {
      if (line.empty()) continue;
      const nlohmann::json candidate = nlohmann::json::parse(line, nullptr, false);
      if (!candidate.is_string()) {
        std::cerr << "not a JSON string (use --raw for plain lines): " << line << "\n";
        return 64;
      }
      text = candidate.get<std::string>();
    }
    int32_t state = automaton.Start();
    for (char c : text) {
      state = automaton.Step(state, static_cast<uint8_t>(c));
      if (state == kDeadState) break;
    }
    std::cout << (state != kDeadState && automaton.Accepting(state) ? "match" : "no-match") << "\n";
  }
  return 0;
}
