// Strings (minLength / maxLength, pattern, format) and numbers (minimum /
// maximum and their exclusive forms).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/grammar/json_schema_converter.h"
#include "engine/grammar/json_schema_numbers.h"
#include "engine/grammar/regex_emit.h"

namespace kvserve::grammar {

absl::StatusOr<std::string> SchemaConverter::VisitString(const SchemaJson& schema,
                                                         const std::string& pointer) {
  const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
  if (auto it = schema.find("format"); it != schema.end()) {
    // Visit() has checked that the format is one of ours.
    if (has_length || schema.contains("pattern")) {
      return Error(pointer, "format with pattern, minLength or maxLength is not supported");
    }
    return absl::StrCat("\"\\\"\" ", Builtin(it->get<std::string>()), " \"\\\"\"");
  }
  if (auto it = schema.find("pattern"); it != schema.end()) {
    const std::string at = pointer + "/pattern";
    if (!it->is_string()) return Error(at, "pattern must be a string");
    if (has_length) return Error(pointer, "pattern with minLength or maxLength is not supported");
    auto tree = ParseRegex(it->get<std::string>());
    if (!tree.ok()) return Error(at, std::string(tree.status().message()));
    // The pattern must match the whole string, as in xgrammar, vLLM and
    // llama.cpp (JSON Schema searches: "^...$" means the same in both).
    return absl::StrCat("\"\\\"\" ( ", EmitRegex(*tree, RegexTarget::kJsonStringContent),
                        " ) \"\\\"\"");
  }
  auto min = Count(schema, "minLength", pointer);
  if (!min.ok()) return min.status();
  auto max = Count(schema, "maxLength", pointer);
  if (!max.ok()) return max.status();
  if (!*min && !*max) return Builtin("string");
  const int64_t lo = min->value_or(0);
  if (*max && lo > **max) {
    return Error(pointer, absl::StrCat("minLength ", lo, " is above maxLength ", **max));
  }
  const std::string c = Builtin("char");
  std::string repeat;
  if (!*max) {
    repeat = absl::StrCat(c, "{", lo, ",}");
  } else if (**max == 0) {
    repeat = "";
  } else if (lo == **max) {
    repeat = absl::StrCat(c, "{", lo, "}");
  } else {
    repeat = absl::StrCat(c, "{", lo, ",", **max, "}");
  }
  return absl::StrCat("\"\\\"\" ", repeat, repeat.empty() ? "" : " ", "\"\\\"\"");
}

namespace {

struct Bound {
  double value = 0;
  bool exclusive = false;
};

}  // namespace

absl::StatusOr<std::string> SchemaConverter::VisitNumber(const SchemaJson& schema,
                                                         const std::string& pointer, bool integer) {
  // Reads one bound: `inclusive` (minimum / maximum) and `exclusive`
  // (exclusiveMinimum / exclusiveMaximum: a number, or in draft 4 a boolean
  // that makes `inclusive` exclusive). `lower` picks the stricter of two.
  const auto read = [&](const std::string& inclusive, const std::string& exclusive,
                        bool lower) -> absl::StatusOr<std::optional<Bound>> {
    std::optional<Bound> bound;
    bool draft4_exclusive = false;
    if (auto it = schema.find(exclusive); it != schema.end()) {
      if (it->is_boolean()) {
        draft4_exclusive = it->get<bool>();
      } else if (it->is_number()) {
        bound = Bound{it->get<double>(), true};
      } else {
        return Error(absl::StrCat(pointer, "/", exclusive),
                     absl::StrCat(exclusive, " must be a number"));
      }
    }
    if (auto it = schema.find(inclusive); it != schema.end()) {
      if (!it->is_number()) {
        return Error(absl::StrCat(pointer, "/", inclusive),
                     absl::StrCat(inclusive, " must be a number"));
      }
      const Bound b{it->get<double>(), draft4_exclusive};
      const bool stricter = !bound || (lower ? b.value > bound->value : b.value < bound->value);
      if (stricter) bound = b;
    }
    if (bound && !(std::fabs(bound->value) <= static_cast<double>(kMaxBoundMagnitude))) {
      return Error(pointer, absl::StrCat("bounds beyond ±10^18 are not supported"));
    }
    return bound;
  };
  auto lo = read("minimum", "exclusiveMinimum", /*lower=*/true);
  if (!lo.ok()) return lo.status();
  auto hi = read("maximum", "exclusiveMaximum", /*lower=*/false);
  if (!hi.ok()) return hi.status();
  if (!*lo && !*hi) return Builtin(integer ? "integer" : "number");

  if (integer) {
    std::optional<int64_t> from, to;
    if (*lo) {
      const double v = (*lo)->value;
      from = static_cast<int64_t>((*lo)->exclusive ? std::floor(v) + 1 : std::ceil(v));
    }
    if (*hi) {
      const double v = (*hi)->value;
      to = static_cast<int64_t>((*hi)->exclusive ? std::ceil(v) - 1 : std::floor(v));
    }
    auto expr = IntegerRangeGbnf(from, to);
    if (!expr) return Error(pointer, "no integer lies between minimum and maximum");
    return *expr;
  }
  // Numbers: the grammar enforces integral bounds exactly (without exponents).
  std::optional<NumberBound> from, to;
  for (auto [bound, target, name] :
       {std::tuple{&*lo, &from, "minimum"}, std::tuple{&*hi, &to, "maximum"}}) {
    if (!*bound) continue;
    const double v = (*bound)->value;
    if (std::floor(v) != v) {
      return Error(pointer, absl::StrCat("a fractional ", name,
                                         " on a number is not supported (integral bounds are)"));
    }
    *target = NumberBound{static_cast<int64_t>(v), (*bound)->exclusive};
  }
  auto expr = NumberRangeGbnf(from, to);
  if (!expr) return Error(pointer, "no number lies between minimum and maximum");
  return *expr;
}

}  // namespace kvserve::grammar
