// The parsed template: expressions and statements as jinja2's parser builds
// them. One node type each for expressions and statements, tagged by kind,
// keeps the interpreter's switch in one place.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kConst,      // constant
  kName,       // name
  kList,       // children (list literal)
  kTuple,      // children
  kDict,       // children: key, value, key, value, ...
  kGetAttr,    // children[0] . name
  kGetItem,    // children[0] [ children[1] ]
  kSlice,      // children[0] [ children[1] : children[2] : children[3] ] (null when absent)
  kCall,       // children[0] ( children[1..], keywords )
  kFilter,     // children[0] | name ( children[1..], keywords )
  kTest,       // children[0] is [not] name ( children[1..], keywords )
  kUnary,      // name ("-", "+", "not") children[0]
  kBinary,     // children[0] name children[1]: + - * / // % ** ~
  kAnd,        // children[0] and children[1]
  kOr,         // children[0] or children[1]
  kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ...
  kCondition,  // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value constant;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;  // kCompare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  bool negated = false;          // kTest: `is not`
};

enum class StmtKind {
  kText,        // text
  kPrint,       // {{ expr }}
  kIf,          // conditions[i] -> bodies[i]; bodies.back() is the else when bodies > conditions
  kFor,         // for targets in expr [if filter] body [else else_body]
  kSet,         // set targets = expr; or set ns.attr = expr (attribute non-empty)
  kSetBlock,    // set targets[0] %} bodies[0] {% endset
  kMacro,       // macro name(targets = defaults) bodies[0]
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                // kText
  std::string name;                // kMacro name; kSet attribute
  ExprPtr expr;                    // kPrint, kFor iterable, kSet value
  ExprPtr filter;                  // kFor `if` filter
  std::vector<std::string> targets;  // kFor, kSet, kSetBlock names; kMacro params
  std::vector<ExprPtr> defaults;   // kMacro: one per param, null when none
  std::vector<ExprPtr> conditions; // kIf
  std::vector<Body> bodies;        // kIf branches; [0] the body elsewhere
  Body else_body;                  // kFor else
  bool unpack = false;             // targets came as a tuple (`for a, b in ...`)
  // kFor body / kMacro body: names that start undefined in each new scope
  // (see scope_analysis.h).
  std::vector<std::string> undefined_at_entry;
};

/// A parsed template.
struct Program {
  Body body;
  std::vector<std::string> undefined_at_entry;  // of the top-level scope
};

}  // namespace kvserve::chat_template
