// The JSON Schema converter's state (json_schema_to_gbnf.h is its entry):
// one pass over the schema that returns, for each subschema, a GBNF
// expression over the JSON text it accepts, adding named rules as it goes
// (one per object, array and union, one per $ref target so that recursive
// schemas become recursive rules). Split by concern:
//   json_schema_converter.cc  keywords, combinators, $ref, the rule table
//   json_schema_builtins.cc   JSON's lexical rules and the string formats
//   json_schema_objects.cc    objects and arrays
//   json_schema_scalars.cc    strings (length, pattern, format) and numbers
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kvserve::grammar {

/// Schemas nest at most this deep ($ref targets count where they are first used).
inline constexpr int kMaxSchemaDepth = 64;
/// The largest minItems / maxItems / minLength / maxLength enforced; larger
/// ones are refused by name (their expansion would exceed the grammar limits).
inline constexpr int64_t kMaxSchemaCount = 10000;

// The schema as parsed: ordered, so that properties keep the schema's order.
using SchemaJson = nlohmann::ordered_json;

class SchemaConverter {
 public:
  explicit SchemaConverter(const SchemaJson& root) : root_(root) {}

  /// The whole grammar, `root` first.
  absl::StatusOr<std::string> Convert();

 private:
  // A GBNF expression, usable as one item of a sequence, for the JSON text
  // of every value `schema` (at JSON pointer `pointer`) accepts. `hint` names
  // the rules it creates.
  absl::StatusOr<std::string> Visit(const SchemaJson& schema, const std::string& pointer,
                                    const std::string& hint, int depth);
  absl::StatusOr<std::string> VisitRef(const SchemaJson& schema, const std::string& pointer,
                                       int depth);
  absl::StatusOr<std::string> VisitUnion(const SchemaJson& alternatives, const std::string& pointer,
                                         const std::string& hint, int depth);
  absl::StatusOr<std::string> VisitEnum(const SchemaJson& schema, const std::string& pointer);
  absl::StatusOr<std::string> VisitType(const SchemaJson& schema, std::string_view type,
                                        const std::string& pointer, const std::string& hint,
                                        int depth);

  // json_schema_objects.cc
  absl::StatusOr<std::string> VisitObject(const SchemaJson& schema, const std::string& pointer,
                                          const std::string& hint, int depth);
  absl::StatusOr<std::string> VisitArray(const SchemaJson& schema, const std::string& pointer,
                                         const std::string& hint, int depth);
  // A JSON string that is none of `names` (for additional properties).
  std::string KeyOtherThan(const std::vector<std::string>& names);

  // json_schema_scalars.cc
  absl::StatusOr<std::string> VisitString(const SchemaJson& schema, const std::string& pointer);
  absl::StatusOr<std::string> VisitNumber(const SchemaJson& schema, const std::string& pointer,
                                          bool integer);

  // The rule for a built-in (ws, value, string, number, date, ...), added on
  // first use with the rules it needs; returns its name.
  std::string Builtin(std::string_view name);
  // Adds `name ::= body` under a fresh name derived from `hint`, or returns
  // the rule that already has this body.
  std::string AddRule(const std::string& hint, const std::string& body);
  std::string FreshName(const std::string& hint);
  // Whether a rule other than `except` uses rule `name`.
  bool Referenced(const std::string& name, const std::string& except) const;
  // A count keyword (minItems, ...): a non-negative integer up to kMaxSchemaCount.
  absl::StatusOr<std::optional<int64_t>> Count(const SchemaJson& schema, std::string_view key,
                                               const std::string& pointer);

  static absl::Status Error(const std::string& pointer, std::string_view problem);

  const SchemaJson& root_;
  std::vector<std::string> order_;            // rule names, in the order they were added
  std::map<std::string, std::string> rules_;  // name -> body
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> ref_rules_;  // resolved JSON pointer -> rule name
  // $ref targets entered since the last byte-consuming construct ({ or [):
  // meeting one again would be left recursion (a rule reaching itself without
  // consuming input), which no top-down matcher can run.
  std::set<std::string> unconsumed_refs_;
};

/// Whether `name` is a built-in rule's (or root), which schema rules must not take.
bool IsBuiltinRuleName(std::string_view name);

/// `key` escaped for a JSON pointer (~0 ~1).
std::string PointerToken(std::string_view key);

}  // namespace kvserve::grammar
