// Turns a request's constraint (JSON Schema, regex, GBNF grammar, choice list
// or "any JSON object") into a CompiledConstraint for the served model's
// vocabulary, on the calling (RPC) thread, so that a slow or invalid one never
// reaches the engine. Compiled constraints are cached by content: the same
// schema sent again reuses its automaton and every token mask computed so far.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/grammar/compiled_constraint.h"
#include "engine/grammar/token_vocabulary.h"

namespace kvserve::grammar {

struct ConstraintSpec {
  enum class Kind { kJsonSchema, kRegex, kGrammar, kChoice, kJsonObject };
  Kind kind = Kind::kJsonObject;
  std::string text;                  // the schema, regex or grammar
  std::vector<std::string> choices;  // kChoice
};

/// The API's field name for `kind` ("json_schema", "regex", ...), for messages.
const char* ConstraintFieldName(ConstraintSpec::Kind kind);

struct ConstraintLimits {
  size_t max_bytes = 256 * 1024;          // of the schema, regex, grammar or all choices
  size_t max_grammar_elements = 1 << 18;  // of the grammar it compiles to
  std::chrono::milliseconds max_compile_time{2000};  // parse + the first token's mask
  size_t cache_entries = 64;
};

class ConstraintCompiler {
 public:
  ConstraintCompiler(std::shared_ptr<const TokenVocabulary> vocabulary, ConstraintLimits limits);

  /// INVALID_ARGUMENT naming the field and the problem; RESOURCE_EXHAUSTED
  /// past a limit. Thread-safe.
  absl::StatusOr<std::shared_ptr<CompiledConstraint>> Compile(const ConstraintSpec& spec);

  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  size_t cache_hits() const { return hits_; }

 private:
  absl::StatusOr<std::string> ToGbnf(const ConstraintSpec& spec) const;

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  ConstraintLimits limits_;
  std::mutex mu_;
  // Least recently used first.
  std::list<std::pair<std::string, std::shared_ptr<CompiledConstraint>>> lru_;
  absl::flat_hash_map<std::string, decltype(lru_)::iterator> cache_;
  size_t hits_ = 0;
};

/// GBNF for "exactly one of `choices`" (each as a literal).
std::string ChoiceGbnf(const std::vector<std::string>& choices);

}  // namespace kvserve::grammar
