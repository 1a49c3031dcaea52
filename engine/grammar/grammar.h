// A context-free grammar over bytes: what every constraint (JSON Schema,
// regex, GBNF, choice) compiles to before the matcher runs it. Repetitions
// and code-point classes are already expanded: a rule is a list of
// alternatives, an alternative a sequence of byte classes and rule calls.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace kvserve::grammar {

using ByteSet = std::bitset<256>;

struct Element {
  enum class Kind : uint8_t { kBytes, kRule };
  Kind kind = Kind::kBytes;
  int32_t index = 0;  // kBytes: into Grammar::byte_sets; kRule: into Grammar::rules
};

struct Rule {
  std::string name;  // for messages; generated rules get "name_1", ...
  std::vector<std::vector<Element>> alternatives;  // an empty one matches ""
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<ByteSet> byte_sets;
  int32_t root = 0;
  size_t num_elements() const;
};

}  // namespace kvserve::grammar
