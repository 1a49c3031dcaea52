// Expressions, by increasing precedence as in jinja2's parser: conditional,
// or, and, not, comparisons, + -, ~, * / // %, **, unary - +, then primary
// values with postfix access, calls, filters and tests.
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/filters.h"
#include "engine/text/chat_template/parser_impl.h"
#include "engine/text/chat_template/tests.h"

namespace kvserve::chat_template {

// `a, b` makes a tuple where jinja2 allows one (print, set, for iterable).
ExprPtr Parser::ParseTuple(bool allow_condition) {
  int line = Peek().line;
  ExprPtr first = allow_condition ? ParseExpression() : ParseOr();
  if (!IsOp(",")) return first;
  ExprPtr tuple = MakeExpr(ExprKind::kTuple, line);
  tuple->children.push_back(std::move(first));
  while (IsOp(",")) {
    Next();
    if (AtExpressionEnd()) break;
    tuple->children.push_back(allow_condition ? ParseExpression() : ParseOr());
  }
  return tuple;
}

bool Parser::AtExpressionEnd() const {
  TokenType t = Peek().type;
  return t == TokenType::kBlockEnd || t == TokenType::kPrintEnd || t == TokenType::kEnd ||
         IsOp(")") || IsOp("]") || IsOp("}") || IsName("if");
}

ExprPtr Parser::ParseExpression() {
  NestingGuard guard(this);
  ExprPtr value = ParseOr();
  while (IsName("if")) {
    int line = Next().line;
    ExprPtr cond = MakeExpr(ExprKind::kCondition, line);
    cond->children.push_back(ParseOr());
    cond->children.push_back(std::move(value));
    if (IsName("else")) {
      Next();
      cond->children.push_back(ParseExpression());
    } else {
      cond->children.push_back(nullptr);
    }
    value = std::move(cond);
  }
  return value;
}

ExprPtr Parser::Binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
  ExprPtr e = MakeExpr(kind, line);
  e->name = std::move(op);
  e->children.push_back(std::move(left));
  e->children.push_back(std::move(right));
  return e;
}

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  while (IsName("or")) {
    int line = Next().line;
    left = Binary(ExprKind::kOr, "or", std::move(left), ParseAnd(), line);
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  while (IsName("and")) {
    int line = Next().line;
    left = Binary(ExprKind::kAnd, "and", std::move(left), ParseNot(), line);
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  NestingGuard guard(this);
  if (IsName("not")) {
    int line = Next().line;
    ExprPtr e = MakeExpr(ExprKind::kUnary, line);
    e->name = "not";
    e->children.push_back(ParseNot());
    return e;
  }
  return ParseCompare();
}

ExprPtr Parser::ParseCompare() {
  int line = Peek().line;
  ExprPtr first = ParseMath1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Token& t = Peek();
    if (t.type == TokenType::kOperator &&
        (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" ||
         t.value == ">" || t.value == ">=")) {
      op = t.value;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && IsName("in", 1)) {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = MakeExpr(ExprKind::kCompare, line);
      cmp->children.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->children.push_back(ParseMath1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::ParseMath1() {
  ExprPtr left = ParseConcat();
  while (IsOp("+") || IsOp("-")) {
    const Token& t = Next();
    left = Binary(ExprKind::kBinary, t.value, std::move(left), ParseConcat(), t.line);
  }
  return left;
}

ExprPtr Parser::ParseConcat() {
  ExprPtr left = ParseMath2();
  while (IsOp("~")) {
    const Token& t = Next();
    left = Binary(ExprKind::kBinary, "~", std::move(left), ParseMath2(), t.line);
  }
  return left;
}

ExprPtr Parser::ParseMath2() {
  ExprPtr left = ParsePow();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token& t = Next();
    left = Binary(ExprKind::kBinary, t.value, std::move(left), ParsePow(), t.line);
  }
  return left;
}

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  while (IsOp("**")) {
    const Token& t = Next();
    left = Binary(ExprKind::kBinary, "**", std::move(left), ParseUnary(true), t.line);
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  NestingGuard guard(this);
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const Token& t = Next();
    node = MakeExpr(ExprKind::kUnary, t.line);
    node->name = t.value;
    node->children.push_back(ParseUnary(false));
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  const Token& t = Peek();
  switch (t.type) {
    case TokenType::kName: {
      Next();
      if (t.value == "true" || t.value == "True") return MakeConst(Value(true), t.line);
      if (t.value == "false" || t.value == "False") return MakeConst(Value(false), t.line);
      if (t.value == "none" || t.value == "None") return MakeConst(Value::MakeNone(), t.line);
      ExprPtr e = MakeExpr(ExprKind::kName, t.line);
      e->name = t.value;
      return e;
    }
    case TokenType::kString: {
      std::string s;
      int line = t.line;
      while (Peek().type == TokenType::kString) s += Next().value;
      return MakeConst(Value(std::move(s)), line);
    }
    case TokenType::kInteger: {
      Next();
      return MakeConst(Value(IntegerLiteral(t)), t.line);
    }
    case TokenType::kFloat:
      Next();
      // strtod, not std::stod: like Python, 1e400 is inf and 1e-400 is 0.0
      // (std::stod throws out_of_range for both).
      return MakeConst(Value(std::strtod(t.value.c_str(), nullptr)), t.line);
    case TokenType::kOperator:
      if (t.value == "(") {
        Next();
        if (IsOp(")")) {
          Next();
          return MakeExpr(ExprKind::kTuple, t.line);
        }
        ExprPtr inner = ParseTuple(true);
        ExpectOp(")");
        return inner;
      }
      if (t.value == "[") {
        Next();
        ExprPtr list = MakeExpr(ExprKind::kList, t.line);
        while (!IsOp("]")) {
          if (!list->children.empty()) ExpectOp(",");
          if (IsOp("]")) break;
          list->children.push_back(ParseExpression());
        }
        Next();
        return list;
      }
      if (t.value == "{") {
        Next();
        ExprPtr dict = MakeExpr(ExprKind::kDict, t.line);
        while (!IsOp("}")) {
          if (!dict->children.empty()) ExpectOp(",");
          if (IsOp("}")) break;
          dict->children.push_back(ParseExpression());
          ExpectOp(":");
          dict->children.push_back(ParseExpression());
        }
        Next();
        return dict;
      }
      break;
    default:
      break;
  }
  Expected("an expression");
}

int64_t Parser::IntegerLiteral(const Token& t) {
  int64_t v = 0;  // the lexer leaves digits only (underscores dropped)
  if (!absl::SimpleAtoi(t.value, &v)) {
    Error(t, absl::StrCat("integer ", t.value, " does not fit in 64 bits"));
  }
  return v;
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".")) {
      const Token& dot = Next();
      const Token& t = Next();
      if (t.type == TokenType::kName) {
        ExprPtr e = MakeExpr(ExprKind::kGetAttr, dot.line);
        e->name = t.value;
        e->children.push_back(std::move(node));
        node = std::move(e);
      } else if (t.type == TokenType::kInteger) {
        int64_t index = 0;
        if (absl::SimpleAtoi(t.value, &index)) {
          ExprPtr e = MakeExpr(ExprKind::kGetItem, dot.line);
          e->children.push_back(std::move(node));
          e->children.push_back(MakeConst(Value(index), t.line));
          node = std::move(e);
        } else {
          // Too big for any index: jinja2 finds nothing there (undefined),
          // and so does an attribute of that name.
          ExprPtr e = MakeExpr(ExprKind::kGetAttr, dot.line);
          e->name = t.value;
          e->children.push_back(std::move(node));
          node = std::move(e);
        }
      } else {
        Error(t, absl::StrCat("expected an attribute name after '.', got ", Describe(t)));
      }
    } else if (IsOp("[")) {
      node = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      node = ParseCall(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  int line = Next().line;  // [
  ExprPtr parts[3];
  bool is_slice = false;
  int part = 0;
  while (!IsOp("]")) {
    if (IsOp(":")) {
      Next();
      is_slice = true;
      if (++part > 2) Expected("']'");
      continue;
    }
    if (parts[part]) Expected("':' or ']'");
    parts[part] = ParseExpression();
  }
  Next();
  if (!is_slice) {
    if (!parts[0]) Error(Peek(), "empty subscript '[]'");
    ExprPtr e = MakeExpr(ExprKind::kGetItem, line);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(parts[0]));
    return e;
  }
  ExprPtr e = MakeExpr(ExprKind::kSlice, line);
  e->children.push_back(std::move(node));
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

void Parser::ParseCallArgs(Expr* call) {
  ExpectOp("(");
  bool first = true;
  while (!IsOp(")")) {
    if (!first) ExpectOp(",");
    first = false;
    if (IsOp(")")) break;
    if (Peek().type == TokenType::kName && IsOp("=", 1)) {
      std::string key = Next().value;
      Next();
      call->keywords.emplace_back(std::move(key), ParseExpression());
    } else {
      if (!call->keywords.empty()) Error(Peek(), "positional argument follows keyword argument");
      call->children.push_back(ParseExpression());
    }
  }
  Next();
}

ExprPtr Parser::ParseCall(ExprPtr node) {
  ExprPtr e = MakeExpr(ExprKind::kCall, Peek().line);
  e->children.push_back(std::move(node));
  ParseCallArgs(e.get());
  return e;
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      Next();
      const Token& t = Peek();
      std::string name = ExpectName("a filter name");
      if (!IsKnownFilter(name)) Error(t, absl::StrCat("no filter named '", name, "'"));
      ExprPtr e = MakeExpr(ExprKind::kFilter, t.line);
      e->name = name;
      e->children.push_back(std::move(node));
      if (IsOp("(")) ParseCallArgs(e.get());
      node = std::move(e);
    } else if (IsName("is")) {
      Next();
      ExprPtr e = MakeExpr(ExprKind::kTest, Peek().line);
      if (IsName("not")) {
        Next();
        e->negated = true;
      }
      const Token& t = Peek();
      std::string name;
      // `==`-style test names are allowed by jinja2 only as words; `none`
      // and `true`/`false` are names here too.
      name = ExpectName("a test name");
      if (!IsKnownTest(name)) Error(t, absl::StrCat("no test named '", name, "'"));
      e->name = name;
      e->children.push_back(std::move(node));
      if (IsOp("(")) {
        ParseCallArgs(e.get());
      } else {
        TokenType tt = Peek().type;
        bool starts_arg = tt == TokenType::kName || tt == TokenType::kString ||
                          tt == TokenType::kInteger || tt == TokenType::kFloat ||
                          IsOp("[") || IsOp("{");
        if (starts_arg && !IsName("else") && !IsName("or") && !IsName("and")) {
          if (IsName("is")) Error(Peek(), "you cannot chain multiple tests with 'is'");
          e->children.push_back(ParsePostfix(ParsePrimary()));
        }
      }
      node = std::move(e);
    } else if (IsOp("(")) {
      node = ParseCall(std::move(node));
    } else {
      return node;
    }
  }
}

}  // namespace kvserve::chat_template
