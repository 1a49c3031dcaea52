#include "engine/grammar/regex_to_gbnf.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/grammar/regex_emit.h"

namespace kvserve::grammar {
namespace {

// Where an expression goes: alone, as one item of a sequence (an alternation
// needs parentheses), or under a quantifier (anything but one literal or
// class needs them).
enum class Place : uint8_t { kAlone, kInSequence, kRepeated };

class Emitter {
 public:
  explicit Emitter(RegexTarget target) : target_(target) {}

  std::string Emit(const RegexNode& node, Place place) {
    switch (node.kind) {
      case RegexNode::Kind::kEmpty:
        return "\"\"";
      case RegexNode::Kind::kLiteral:
        return Literal({node.code_point});
      case RegexNode::Kind::kClass:
        return ClassExpr(node.set, place);
      case RegexNode::Kind::kConcat:
        return Concat(node, place);
      case RegexNode::Kind::kAlternate: {
        std::vector<std::string> parts;
        for (const RegexNode& child : node.children) parts.push_back(Emit(child, Place::kAlone));
        const std::string joined = absl::StrJoin(parts, " | ");
        return place == Place::kAlone ? joined : "(" + joined + ")";
      }
      case RegexNode::Kind::kRepeat:
        return Repeat(node);
    }
    return "\"\"";
  }

 private:
  std::string Literal(const std::vector<uint32_t>& cps) {
    if (target_ == RegexTarget::kText) return GbnfLiteralOf(cps);
    std::string json;
    for (uint32_t cp : cps) json += JsonEscapedChar(cp);
    return GbnfLiteral(json);
  }

  std::string ClassExpr(const CodePointSet& set, Place place) {
    if (target_ == RegexTarget::kText) return GbnfClass(set);
    // JSON: the characters that need no escape as one class, each one that
    // does as its own literal.
    const CodePointSet special = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    const CodePointSet plain = Subtract(set, special);
    std::vector<std::string> parts;
    if (!plain.empty()) parts.push_back(GbnfClass(plain));
    for (const CodePointRange& r : Subtract(set, plain)) {
      for (uint32_t cp = r.lo; cp <= r.hi; ++cp) parts.push_back(Literal({cp}));
    }
    const std::string joined = absl::StrJoin(parts, " | ");
    return parts.size() == 1 || place == Place::kAlone ? joined : "(" + joined + ")";
  }

  std::string Concat(const RegexNode& node, Place place) {
    std::vector<std::string> parts;
    std::vector<uint32_t> run;  // consecutive literals become one "..."
    for (const RegexNode& child : node.children) {
      if (child.kind == RegexNode::Kind::kLiteral) {
        run.push_back(child.code_point);
        continue;
      }
      if (!run.empty()) parts.push_back(Literal(run)), run.clear();
      parts.push_back(Emit(child, Place::kInSequence));
    }
    if (!run.empty()) parts.push_back(Literal(run));
    const std::string joined = absl::StrJoin(parts, " ");
    return parts.size() == 1 || place != Place::kRepeated ? joined : "(" + joined + ")";
  }

  std::string Repeat(const RegexNode& node) {
    if (node.max == 0) return "\"\"";
    const RegexNode& child = node.children[0];
    std::string body = Emit(child, Place::kRepeated);
    // GBNF takes one quantifier per item: (a*)* keeps its parentheses.
    if (child.kind == RegexNode::Kind::kRepeat) body = "(" + body + ")";
    std::string quantifier;
    if (node.min == 0 && node.max == -1) {
      quantifier = "*";
    } else if (node.min == 1 && node.max == -1) {
      quantifier = "+";
    } else if (node.min == 0 && node.max == 1) {
      quantifier = "?";
    } else if (node.max == -1) {
      quantifier = absl::StrFormat("{%d,}", node.min);
    } else if (node.min == node.max) {
      if (node.min == 1) return body;
      quantifier = absl::StrFormat("{%d}", node.min);
    } else {
      quantifier = absl::StrFormat("{%d,%d}", node.min, node.max);
    }
    return body + quantifier;
  }

  RegexTarget target_;
};

}  // namespace

std::string JsonEscapedChar(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (cp < 0x20) return absl::StrFormat("\\u%04x", cp);
  std::string out;
  AppendUtf8(cp, out);
  return out;
}

std::string EmitRegex(const RegexNode& node, RegexTarget target) {
  return Emitter(target).Emit(node, Place::kAlone);
}

absl::StatusOr<std::string> RegexToGbnfExpression(std::string_view regex, std::string_view prefix,
                                                  std::string& extra_rules) {
  // Every regex construct has a direct GBNF form, so no rules are needed;
  // `prefix` and `extra_rules` are there for converters that do need them.
  (void)prefix;
  (void)extra_rules;
  auto tree = ParseRegex(regex);
  if (!tree.ok()) return tree.status();
  return EmitRegex(*tree, RegexTarget::kText);
}

absl::StatusOr<std::string> RegexToGbnf(std::string_view regex) {
  std::string rules;
  auto expression = RegexToGbnfExpression(regex, "regex", rules);
  if (!expression.ok()) return expression.status();
  return absl::StrCat("root ::= ", *expression, "\n", rules);
}

}  // namespace kvserve::grammar
