#include "engine/text/chat_template/parser.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/filters.h"
#include "engine/text/chat_template/lexer.h"
#include "engine/text/chat_template/tests.h"

namespace kvserve::chat_template {
namespace {

ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Program Run() {
    Program program;
    std::string end_tag;
    program.body = ParseBody({}, &end_tag);
    return program;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Next() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kOperator && Peek(ahead).value == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kName && Peek(ahead).value == name;
  }

  [[noreturn]] void Error(const Token& at, const std::string& what) const {
    Fail(absl::StrCat("line ", at.line, ": ", what));
  }
  [[noreturn]] void Expected(const std::string& what) const {
    Error(Peek(), absl::StrCat("expected ", what, ", got ", Describe(Peek())));
  }
  void ExpectOp(std::string_view op) {
    if (!IsOp(op)) Expected(absl::StrCat("'", std::string(op), "'"));
    Next();
  }
  void ExpectBlockEnd() {
    if (Peek().type != TokenType::kBlockEnd) Expected("end of statement block '%}'");
    Next();
  }
  std::string ExpectName(const std::string& what) {
    if (Peek().type != TokenType::kName) Expected(what);
    return Next().value;
  }

  // Parses statements until a block tag named in `end_tags`; leaves the tag's
  // name in *end_tag and the position after it.
  Body ParseBody(std::initializer_list<std::string_view> end_tags, std::string* end_tag) {
    Body body;
    while (true) {
      const Token& t = Peek();
      if (t.type == TokenType::kEnd) {
        if (end_tags.size() == 0) return body;
        std::vector<std::string> names;
        for (std::string_view n : end_tags) names.push_back(absl::StrCat("'", std::string(n), "'"));
        Error(t, absl::StrCat("unexpected end of template, expected ", absl::StrJoin(names, " or ")));
      }
      if (t.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->text = t.value;
        body.push_back(std::move(s));
        Next();
      } else if (t.type == TokenType::kPrintBegin) {
        Next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = t.line;
        s->expr = ParseTuple(/*allow_condition=*/true);
        if (Peek().type != TokenType::kPrintEnd) Expected("end of print statement '}}'");
        Next();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::kBlockBegin) {
        Next();
        const Token& name = Peek();
        if (name.type != TokenType::kName) Expected("a statement name");
        for (std::string_view end : end_tags) {
          if (name.value == end) {
            *end_tag = name.value;
            Next();
            return body;
          }
        }
        body.push_back(ParseStatement());
      } else {
        Error(t, absl::StrCat("unexpected ", Describe(t)));
      }
    }
  }

  StmtPtr ParseStatement() {
    const Token& tag = Next();
    auto s = std::make_unique<Stmt>();
    s->line = tag.line;
    const std::string& name = tag.value;
    if (name == "if") return ParseIf(std::move(s));
    if (name == "for") return ParseFor(std::move(s));
    if (name == "set") return ParseSet(std::move(s));
    if (name == "macro") return ParseMacro(std::move(s));
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) Error(tag, absl::StrCat("'", name, "' outside of a loop"));
      s->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      ExpectBlockEnd();
      return s;
    }
    if (name == "generation") {
      // transformers' {% generation %} marks assistant text for masks; it
      // renders its body unchanged.
      ExpectBlockEnd();
      std::string end_tag;
      s->kind = StmtKind::kIf;
      s->bodies.push_back(ParseBody({"endgeneration"}, &end_tag));
      s->conditions.push_back(MakeConst(Value(true), tag.line));
      ExpectBlockEnd();
      return s;
    }
    Error(tag, absl::StrCat("encountered unknown tag '", name, "'"));
  }

  ExprPtr MakeConst(Value v, int line) {
    ExprPtr e = MakeExpr(ExprKind::kConst, line);
    e->constant = std::move(v);
    return e;
  }

  StmtPtr ParseIf(StmtPtr s) {
    s->kind = StmtKind::kIf;
    s->conditions.push_back(ParseTuple(/*allow_condition=*/true));
    ExpectBlockEnd();
    while (true) {
      std::string end_tag;
      s->bodies.push_back(ParseBody({"elif", "else", "endif"}, &end_tag));
      if (end_tag == "elif") {
        s->conditions.push_back(ParseTuple(true));
        ExpectBlockEnd();
        continue;
      }
      ExpectBlockEnd();
      if (end_tag == "else") {
        s->bodies.push_back(ParseBody({"endif"}, &end_tag));
        ExpectBlockEnd();
      }
      return s;
    }
  }

  // Names, or a tuple of names: `x`, `k, v`, `(k, v)`.
  void ParseTargets(Stmt* s) {
    bool parens = IsOp("(");
    if (parens) Next();
    s->targets.push_back(ExpectName("a variable name"));
    while (IsOp(",")) {
      Next();
      s->unpack = true;
      if (Peek().type != TokenType::kName) break;
      s->targets.push_back(Next().value);
    }
    if (parens) {
      s->unpack = true;
      ExpectOp(")");
    }
  }

  StmtPtr ParseFor(StmtPtr s) {
    s->kind = StmtKind::kFor;
    ParseTargets(s.get());
    if (!IsName("in")) Expected("'in'");
    Next();
    s->expr = ParseTuple(/*allow_condition=*/false);
    if (IsName("if")) {
      Next();
      s->filter = ParseExpression();
    }
    if (IsName("recursive")) Error(Peek(), "recursive loops are not supported");
    ExpectBlockEnd();
    ++loop_depth_;
    std::string end_tag;
    s->bodies.push_back(ParseBody({"endfor", "else"}, &end_tag));
    --loop_depth_;
    ExpectBlockEnd();
    if (end_tag == "else") {
      s->else_body = ParseBody({"endfor"}, &end_tag);
      ExpectBlockEnd();
    }
    return s;
  }

  StmtPtr ParseSet(StmtPtr s) {
    if (Peek().type == TokenType::kName && IsOp(".", 1)) {
      s->kind = StmtKind::kSet;
      s->targets.push_back(Next().value);
      Next();
      s->name = ExpectName("an attribute name");
      ExpectOp("=");
      s->expr = ParseTuple(true);
      ExpectBlockEnd();
      return s;
    }
    ParseTargets(s.get());
    if (IsOp("=")) {
      Next();
      s->kind = StmtKind::kSet;
      s->expr = ParseTuple(true);
      ExpectBlockEnd();
      return s;
    }
    if (s->unpack || s->targets.size() != 1) Expected("'='");
    s->kind = StmtKind::kSetBlock;
    ExpectBlockEnd();
    std::string end_tag;
    s->bodies.push_back(ParseBody({"endset"}, &end_tag));
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseMacro(StmtPtr s) {
    s->kind = StmtKind::kMacro;
    s->name = ExpectName("a macro name");
    ExpectOp("(");
    while (!IsOp(")")) {
      if (!s->targets.empty()) ExpectOp(",");
      if (IsOp(")")) break;
      s->targets.push_back(ExpectName("a parameter name"));
      if (IsOp("=")) {
        Next();
        s->defaults.push_back(ParseExpression());
      } else {
        if (!s->defaults.empty() && s->defaults.back() != nullptr) {
          Error(Peek(), "non-default argument follows default argument");
        }
        s->defaults.push_back(nullptr);
      }
    }
    Next();
    ExpectBlockEnd();
    std::string end_tag;
    int saved_depth = loop_depth_;
    loop_depth_ = 0;
    s->bodies.push_back(ParseBody({"endmacro"}, &end_tag));
    loop_depth_ = saved_depth;
    if (Peek().type == TokenType::kName) Next();  // {% endmacro name %}
    ExpectBlockEnd();
    return s;
  }

  // ---- expressions, by increasing precedence --------------------------------

  // `a, b` makes a tuple where jinja2 allows one (print, set, for iterable).
  ExprPtr ParseTuple(bool allow_condition) {
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

  bool AtExpressionEnd() const {
    TokenType t = Peek().type;
    return t == TokenType::kBlockEnd || t == TokenType::kPrintEnd || t == TokenType::kEnd ||
           IsOp(")") || IsOp("]") || IsOp("}") || IsName("if");
  }

  ExprPtr ParseExpression() {
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

  ExprPtr Binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
    ExprPtr e = MakeExpr(kind, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      int line = Next().line;
      left = Binary(ExprKind::kOr, "or", std::move(left), ParseAnd(), line);
    }
    return left;
  }

  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      int line = Next().line;
      left = Binary(ExprKind::kAnd, "and", std::move(left), ParseNot(), line);
    }
    return left;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      int line = Next().line;
      ExprPtr e = MakeExpr(ExprKind::kUnary, line);
      e->name = "not";
      e->children.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
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

  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const Token& t = Next();
      left = Binary(ExprKind::kBinary, t.value, std::move(left), ParseConcat(), t.line);
    }
    return left;
  }

  ExprPtr ParseConcat() {
    ExprPtr left = ParseMath2();
    while (IsOp("~")) {
      const Token& t = Next();
      left = Binary(ExprKind::kBinary, "~", std::move(left), ParseMath2(), t.line);
    }
    return left;
  }

  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& t = Next();
      left = Binary(ExprKind::kBinary, t.value, std::move(left), ParsePow(), t.line);
    }
    return left;
  }

  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOp("**")) {
      const Token& t = Next();
      left = Binary(ExprKind::kBinary, "**", std::move(left), ParseUnary(true), t.line);
    }
    return left;
  }

  ExprPtr ParseUnary(bool with_filter) {
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

  ExprPtr ParsePrimary() {
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
        int64_t v = 0;
        for (char c : t.value) {
          if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) {
            Error(t, absl::StrCat("integer ", t.value, " does not fit in 64 bits"));
          }
        }
        return MakeConst(Value(v), t.line);
      }
      case TokenType::kFloat:
        Next();
        return MakeConst(Value(std::stod(t.value)), t.line);
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

  ExprPtr ParsePostfix(ExprPtr node) {
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
          ExprPtr e = MakeExpr(ExprKind::kGetItem, dot.line);
          e->children.push_back(std::move(node));
          e->children.push_back(MakeConst(Value(static_cast<int64_t>(std::stoll(t.value))), t.line));
          node = std::move(e);
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

  ExprPtr ParseSubscript(ExprPtr node) {
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

  void ParseCallArgs(Expr* call) {
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

  ExprPtr ParseCall(ExprPtr node) {
    ExprPtr e = MakeExpr(ExprKind::kCall, Peek().line);
    e->children.push_back(std::move(node));
    ParseCallArgs(e.get());
    return e;
  }

  ExprPtr ParseFilterExpr(ExprPtr node) {
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

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Program ParseTemplate(std::string_view source) { return Parser(Tokenize(source)).Run(); }

}  // namespace kvserve::chat_template
