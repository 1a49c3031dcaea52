#include "engine/text/chat_template/parser.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/lexer.h"
#include "engine/text/chat_template/parser_impl.h"
#include "engine/text/chat_template/scope_analysis.h"

namespace kvserve::chat_template {

Program Parser::Run() {
  Program program;
  std::string end_tag;
  program.body = ParseBody({}, &end_tag);
  return program;
}

const Token& Parser::Peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

bool Parser::IsOp(std::string_view op, size_t ahead) const {
  return Peek(ahead).type == TokenType::kOperator && Peek(ahead).value == op;
}

bool Parser::IsName(std::string_view name, size_t ahead) const {
  return Peek(ahead).type == TokenType::kName && Peek(ahead).value == name;
}

void Parser::ExpectOp(std::string_view op) {
  if (!IsOp(op)) Expected(absl::StrCat("'", std::string(op), "'"));
  Next();
}

void Parser::ExpectBlockEnd() {
  if (Peek().type != TokenType::kBlockEnd) Expected("end of statement block '%}'");
  Next();
}

std::string Parser::ExpectName(const std::string& what) {
  if (Peek().type != TokenType::kName) Expected(what);
  return Next().value;
}

// Parses statements until a block tag named in `end_tags`; leaves the tag's
// name in *end_tag and the position after it.
Body Parser::ParseBody(std::initializer_list<std::string_view> end_tags, std::string* end_tag) {
  NestingGuard guard(this);
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

StmtPtr Parser::ParseStatement() {
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

ExprPtr Parser::MakeConst(Value v, int line) {
  ExprPtr e = MakeExpr(ExprKind::kConst, line);
  e->constant = std::move(v);
  return e;
}

StmtPtr Parser::ParseIf(StmtPtr s) {
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
void Parser::ParseTargets(Stmt* s) {
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

StmtPtr Parser::ParseFor(StmtPtr s) {
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

StmtPtr Parser::ParseSet(StmtPtr s) {
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

StmtPtr Parser::ParseMacro(StmtPtr s) {
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

Program ParseTemplate(std::string_view source) {
  Program program = Parser(Tokenize(source)).Run();
  AnalyzeScopes(program);
  return program;
}

}  // namespace kvserve::chat_template
