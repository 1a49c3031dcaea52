#include "engine/grammar/constraint_compiler.h"

#include "absl/strings/str_cat.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/regex_to_gbnf.h"

namespace kvserve::grammar {

const char* ConstraintFieldName(ConstraintSpec::Kind kind) {
  switch (kind) {
    case ConstraintSpec::Kind::kJsonSchema: return "json_schema";
    case ConstraintSpec::Kind::kRegex: return "regex";
    case ConstraintSpec::Kind::kGrammar: return "grammar";
    case ConstraintSpec::Kind::kChoice: return "choice";
    case ConstraintSpec::Kind::kJsonObject: return "json_object";
  }
  return "constraint";
}

std::string ChoiceGbnf(const std::vector<std::string>& choices) {
  std::string out = "root ::=";
  for (size_t i = 0; i < choices.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? " " : " | ", GbnfLiteral(choices[i]));
  }
  out.push_back('\n');
  return out;
}

ConstraintCompiler::ConstraintCompiler(std::shared_ptr<const TokenVocabulary> vocabulary,
                                       ConstraintLimits limits)
    : vocabulary_(std::move(vocabulary)), limits_(limits) {}

absl::StatusOr<std::string> ConstraintCompiler::ToGbnf(const ConstraintSpec& spec) const {
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonSchema: return JsonSchemaToGbnf(spec.text);
    case ConstraintSpec::Kind::kRegex: return RegexToGbnf(spec.text);
    case ConstraintSpec::Kind::kGrammar: return spec.text;
    case ConstraintSpec::Kind::kJsonObject: return JsonSchemaToGbnf(R"({"type":"object"})");
    case ConstraintSpec::Kind::kChoice:
      if (spec.choices.empty()) {
        return absl::InvalidArgumentError("choice: give at least one choice");
      }
      for (size_t i = 0; i < spec.choices.size(); ++i) {
        if (spec.choices[i].empty()) {
          return absl::InvalidArgumentError(absl::StrCat("choice[", i, "] is empty"));
        }
      }
      return ChoiceGbnf(spec.choices);
  }
  return absl::InvalidArgumentError("unknown constraint");
}

absl::StatusOr<std::shared_ptr<CompiledConstraint>> ConstraintCompiler::Compile(
    const ConstraintSpec& spec) {
  const char* field = ConstraintFieldName(spec.kind);
  size_t bytes = spec.text.size();
  for (const std::string& c : spec.choices) bytes += c.size();
  if (bytes > limits_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(field, ": ", bytes,
                                                     " bytes, more than the server's limit of ",
                                                     limits_.max_bytes));
  }
  std::string key = absl::StrCat(field, "\n", spec.text);
  for (const std::string& c : spec.choices) absl::StrAppend(&key, "\n", c.size(), ":", c);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      lru_.splice(lru_.end(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
  }
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> gbnf = ToGbnf(spec);
  if (!gbnf.ok()) return gbnf.status();
  GbnfLimits gbnf_limits;
  gbnf_limits.max_bytes = std::max(limits_.max_bytes, size_t(16)) * 64;  // converters expand
  gbnf_limits.max_elements = limits_.max_grammar_elements;
  absl::StatusOr<std::shared_ptr<const Grammar>> grammar = ParseGbnf(*gbnf, gbnf_limits);
  if (!grammar.ok()) {
    const absl::Status& s = grammar.status();
    // The converters' output is ours: a parse error there names the grammar
    // we generated, which the client never saw.
    std::string message(s.message());
    if (spec.kind != ConstraintSpec::Kind::kGrammar) {
      message = absl::StrCat(field, ": compiles to a grammar the matcher refuses: ", message);
    }
    return absl::Status(s.code(), message);
  }
  auto compiled = std::make_shared<CompiledConstraint>(
      *std::move(grammar), vocabulary_, absl::StrCat(field, " (", bytes, " bytes)"));
  const auto spent = std::chrono::steady_clock::now() - started;
  const auto budget = limits_.max_compile_time - spent;
  if (budget <= std::chrono::nanoseconds(0)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": compiling took longer than the server's limit of ",
        limits_.max_compile_time.count(), " ms"));
  }
  if (absl::Status s = compiled->WarmMask(compiled->Start(), budget); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second->second;  // raced
  lru_.emplace_back(key, compiled);
  cache_[key] = std::prev(lru_.end());
  while (lru_.size() > limits_.cache_entries) {
    cache_.erase(lru_.front().first);
    lru_.pop_front();
  }
  return compiled;
}

}  // namespace kvserve::grammar
