// The recursive-descent parser's class, shared by parser.cc (template
// structure and statements) and expression_parser.cc (expressions, with
// jinja2's operator precedence). Internal to the chat_template library.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/ast.h"
#include "engine/text/chat_template/lexer.h"

namespace kvserve::chat_template {

// Bounds the parser's (and so the interpreter's) recursion: nested blocks,
// brackets and unary operators beyond this are refused, not a stack overflow.
inline constexpr int kMaxNesting = 192;

inline ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

/// Parses one template's tokens; throws TemplateError on a syntax error.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Program Run();

 private:
  // Token access and expectations (parser.cc).
  const Token& Peek(size_t ahead = 0) const;
  const Token& Next() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
  bool IsOp(std::string_view op, size_t ahead = 0) const;
  bool IsName(std::string_view name, size_t ahead = 0) const;
  [[noreturn]] void Error(const Token& at, const std::string& what) const {
    Fail(absl::StrCat("line ", at.line, ": ", what));
  }
  [[noreturn]] void Expected(const std::string& what) const {
    Error(Peek(), absl::StrCat("expected ", what, ", got ", Describe(Peek())));
  }
  void ExpectOp(std::string_view op);
  void ExpectBlockEnd();
  std::string ExpectName(const std::string& what);

  // Template structure and statements (parser.cc).
  Body ParseBody(std::initializer_list<std::string_view> end_tags, std::string* end_tag);
  StmtPtr ParseStatement();
  StmtPtr ParseIf(StmtPtr s);
  void ParseTargets(Stmt* s);
  StmtPtr ParseFor(StmtPtr s);
  StmtPtr ParseSet(StmtPtr s);
  StmtPtr ParseMacro(StmtPtr s);

  // Expressions, by increasing precedence (expression_parser.cc).
  ExprPtr MakeConst(Value v, int line);
  ExprPtr ParseTuple(bool allow_condition);
  bool AtExpressionEnd() const;
  ExprPtr ParseExpression();
  ExprPtr Binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line);
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParsePostfix(ExprPtr node);
  // An integer token's value; a parse error naming it when it does not fit
  // in 64 bits.
  int64_t IntegerLiteral(const Token& t);
  ExprPtr ParseSubscript(ExprPtr node);
  void ParseCallArgs(Expr* call);
  ExprPtr ParseCall(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);

  // Counts one level of nesting while alive.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser* parser) : parser_(parser) {
      if (++parser_->nesting_ > kMaxNesting) {
        parser_->Error(parser_->Peek(), absl::StrCat("blocks or expressions nest more than ",
                                                     kMaxNesting, " levels deep"));
      }
    }
    ~NestingGuard() { --parser_->nesting_; }

   private:
    Parser* parser_;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;  // break/continue are allowed only inside a loop
  int nesting_ = 0;
};

}  // namespace kvserve::chat_template
