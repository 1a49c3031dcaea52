// Renders a parsed template: evaluates expressions with Python semantics and
// executes statements with jinja2's scoping (a for loop's body gets a fresh
// scope each iteration, `if` does not open one, a macro sees the scope it was
// defined in). One Interpreter renders once; it owns the scopes it creates.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/chat_template/ast.h"
#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

/// A scope: variables set in it, and the enclosing scope.
struct Frame {
  Frame* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* Find(std::string_view name) const;
  void Set(const std::string& name, Value value);
};

class Interpreter {
 public:
  /// `context`: the render's variables (they shadow the globals).
  Interpreter(const Program& program, Dict context);

  /// Throws TemplateError.
  std::string Render();

  Value Eval(const Expr& expr, Frame& frame);
  Value Call(const Value& callee, CallArgs& args);
  /// jinja2's sandboxed getattr: methods first, then the item.
  Value GetAttr(const Value& object, const std::string& name);
  /// jinja2's getitem: the item first, then a method of that name.
  Value GetItem(const Value& object, const Value& key);
  /// Applies a filter or test by name (for map/select and friends).
  Value ApplyFilter(const std::string& name, const Value& input, CallArgs& args);
  bool ApplyTest(const std::string& name, const Value& input, CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow Exec(const Body& body, Frame& frame, std::string& out);
  Flow ExecStatement(const Stmt& stmt, Frame& frame, std::string& out);
  void ExecFor(const Stmt& stmt, Frame& frame, std::string& out);
  void ExecSet(const Stmt& stmt, Frame& frame);
  void Assign(const Stmt& stmt, Frame& frame, Value value);
  Value MakeMacro(const Stmt& stmt, Frame& frame);
  Value EvalSlice(const Expr& expr, Frame& frame);
  CallArgs EvalArgs(const Expr& expr, size_t first_arg, Frame& frame);
  Value Lookup(const std::string& name, Frame& frame);
  Frame& NewFrame(Frame* parent);

  const Program& program_;
  // Frames are never freed during a render, so macros can keep a pointer to
  // the scope they were defined in.
  std::deque<Frame> frames_;
  Frame* root_ = nullptr;
  int call_depth_ = 0;
};

}  // namespace kvserve::chat_template
