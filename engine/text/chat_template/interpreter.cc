#include "engine/text/chat_template/interpreter.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/filters.h"
#include "engine/text/chat_template/globals.h"
#include "engine/text/chat_template/methods.h"
#include "engine/text/chat_template/operators.h"
#include "engine/text/chat_template/py_string.h"
#include "engine/text/chat_template/tests.h"

namespace kvserve::chat_template {
namespace {

// Python's recursion limit stops runaway macros with an error; so do we,
// well before the C++ stack runs out.
constexpr int kMaxCallDepth = 200;

bool IsIntegral(const Value& v) { return v.is_int() || v.is_bool(); }

// Starts a scope with the names jinja2 makes its own undefined variables
// (scope_analysis.h).
void DeclareUndefined(const std::vector<std::string>& names, Frame& frame) {
  for (const std::string& name : names) frame.Set(name, Value::MakeUndefined(name));
}

bool HoldsReference(const Value& value) {
  if (value.is_namespace() || value.is_callable()) return true;
  if (value.is_list()) {
    for (const Value& item : value.as_list().items) {
      if (HoldsReference(item)) return true;
    }
  }
  if (value.is_dict()) {
    for (const auto& [k, v] : value.as_dict().entries) {
      if (HoldsReference(v)) return true;
    }
  }
  return false;
}

}  // namespace

const Value* Frame::Find(std::string_view name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent) {
    for (const auto& [k, v] : f->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Frame::Set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

Interpreter::Interpreter(const Program& program, Dict context) : program_(program) {
  root_ = &NewFrame(nullptr);
  root_->vars = std::move(context.entries);
  DeclareUndefined(program.undefined_at_entry, *root_);
}

Frame& Interpreter::NewFrame(Frame* parent) {
  frames_.emplace_back();
  frames_.back().parent = parent;
  return frames_.back();
}

std::string Interpreter::Render() {
  std::string out;
  Exec(program_.body, *root_, out);
  return out;
}

Interpreter::Flow Interpreter::Exec(const Body& body, Frame& frame, std::string& out) {
  for (const StmtPtr& stmt : body) {
    Flow flow = ExecStatement(*stmt, frame, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::ExecStatement(const Stmt& stmt, Frame& frame, std::string& out) {
  switch (stmt.kind) {
    case StmtKind::kText: out += stmt.text; break;
    case StmtKind::kPrint: out += ToStr(Eval(*stmt.expr, frame)); break;
    case StmtKind::kIf:
      for (size_t i = 0; i < stmt.conditions.size(); ++i) {
        if (Truthy(Eval(*stmt.conditions[i], frame))) return Exec(stmt.bodies[i], frame, out);
      }
      if (stmt.bodies.size() > stmt.conditions.size()) return Exec(stmt.bodies.back(), frame, out);
      break;
    case StmtKind::kFor: ExecFor(stmt, frame, out); break;
    case StmtKind::kSet: ExecSet(stmt, frame); break;
    case StmtKind::kSetBlock: {
      std::string captured;
      Exec(stmt.bodies[0], frame, captured);
      frame.Set(stmt.targets[0], Value(std::move(captured)));
      break;
    }
    case StmtKind::kMacro: frame.Set(stmt.name, MakeMacro(stmt, frame)); break;
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Interpreter::Assign(const Stmt& stmt, Frame& frame, Value value) {
  if (!stmt.unpack) {
    frame.Set(stmt.targets[0], std::move(value));
    return;
  }
  std::vector<Value> items = Iterate(value);
  if (items.size() != stmt.targets.size()) {
    Fail(absl::StrCat("line ", stmt.line, ": cannot unpack ", items.size(), " values into ",
                      stmt.targets.size(), " names"));
  }
  for (size_t i = 0; i < items.size(); ++i) frame.Set(stmt.targets[i], std::move(items[i]));
}

void Interpreter::ExecSet(const Stmt& stmt, Frame& frame) {
  Value value = Eval(*stmt.expr, frame);
  if (stmt.name.empty()) {
    Assign(stmt, frame, std::move(value));
    return;
  }
  Value target = Lookup(stmt.targets[0], frame);
  if (!target.is_namespace()) {
    Fail(absl::StrCat("line ", stmt.line, ": cannot assign attribute on non-namespace object '",
                      stmt.targets[0], "'"));
  }
  // A namespace holding a namespace or a function could close a reference
  // cycle (ns.self = ns), which shared ownership would leak; templates never
  // need either, so both are refused.
  if (HoldsReference(value)) {
    Fail(absl::StrCat("line ", stmt.line, ": a namespace attribute cannot hold a namespace or a function (",
                      stmt.targets[0], ".", stmt.name, ")"));
  }
  target.as_namespace().attributes.Set(stmt.name, std::move(value));
}

void Interpreter::ExecFor(const Stmt& stmt, Frame& frame, std::string& out) {
  Value iterable = Eval(*stmt.expr, frame);
  std::vector<Value> items = Iterate(iterable);
  Frame& scope = NewFrame(&frame);
  if (stmt.filter) {
    // `for x in xs if cond`: filtered before the loop counts, so loop.length
    // and loop.last see only the kept items.
    std::vector<Value> kept;
    for (Value& item : items) {
      scope.vars.clear();
      DeclareUndefined(stmt.undefined_at_entry, scope);
      Assign(stmt, scope, item);
      if (Truthy(Eval(*stmt.filter, scope))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    scope.vars.clear();
    DeclareUndefined(stmt.undefined_at_entry, scope);
    Dict loop;
    loop.Set("index", Value(i + 1));
    loop.Set("index0", Value(i));
    loop.Set("revindex", Value(n - i));
    loop.Set("revindex0", Value(n - i - 1));
    loop.Set("first", Value(i == 0));
    loop.Set("last", Value(i == n - 1));
    loop.Set("length", Value(n));
    loop.Set("depth", Value(1));
    loop.Set("depth0", Value(0));
    loop.Set("previtem", i > 0 ? items[i - 1] : Value::MakeUndefined("there is no previous item"));
    loop.Set("nextitem", i + 1 < n ? items[i + 1] : Value::MakeUndefined("there is no next item"));
    loop.Set("cycle", Value::MakeCallable("loop.cycle", [i](Interpreter&, CallArgs& args) {
      if (args.positional.empty()) Fail("no items for cycling given");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
    scope.Set("loop", Value::MakeDict(std::move(loop)));
    Assign(stmt, scope, items[i]);
    if (Exec(stmt.bodies[0], scope, out) == Flow::kBreak) break;
  }
  if (n == 0) {
    scope.vars.clear();
    Exec(stmt.else_body, scope, out);
  }
}

Value Interpreter::MakeMacro(const Stmt& stmt, Frame& frame) {
  const Stmt* macro = &stmt;
  Frame* closure = &frame;
  return Value::MakeCallable(stmt.name, [macro, closure](Interpreter& interp, CallArgs& args) {
    const size_t n = macro->targets.size();
    if (args.positional.size() > n) {
      Fail(absl::StrCat("macro '", macro->name, "' takes not more than ", n, " argument(s)"));
    }
    if (interp.call_depth_ >= kMaxCallDepth) {
      Fail(absl::StrCat("macro '", macro->name, "': maximum recursion depth (", kMaxCallDepth,
                        ") exceeded"));
    }
    Frame& scope = interp.NewFrame(closure);
    DeclareUndefined(macro->undefined_at_entry, scope);
    std::vector<bool> given(n, false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      scope.Set(macro->targets[i], args.positional[i]);
      given[i] = true;
    }
    for (auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < n && macro->targets[i] != key) ++i;
      if (i == n) Fail(absl::StrCat("macro '", macro->name, "' takes no keyword argument '", key, "'"));
      if (given[i]) Fail(absl::StrCat("macro '", macro->name, "' got multiple values for argument '", key, "'"));
      scope.Set(key, value);
      given[i] = true;
    }
    for (size_t i = 0; i < n; ++i) {
      if (given[i]) continue;
      scope.Set(macro->targets[i],
                macro->defaults[i] ? interp.Eval(*macro->defaults[i], scope)
                                   : Value::MakeUndefined(macro->targets[i]));
    }
    ++interp.call_depth_;
    std::string out;
    interp.Exec(macro->bodies[0], scope, out);
    --interp.call_depth_;
    return Value(std::move(out));
  });
}

Value Interpreter::Lookup(const std::string& name, Frame& frame) {
  if (const Value* v = frame.Find(name)) return *v;
  if (std::optional<Value> global = LookupGlobal(name)) return *global;
  return Value::MakeUndefined(name);
}

CallArgs Interpreter::EvalArgs(const Expr& expr, size_t first_arg, Frame& frame) {
  CallArgs args;
  for (size_t i = first_arg; i < expr.children.size(); ++i) {
    args.positional.push_back(Eval(*expr.children[i], frame));
  }
  for (const auto& [key, value] : expr.keywords) args.keyword.emplace_back(key, Eval(*value, frame));
  return args;
}

Value Interpreter::Eval(const Expr& expr, Frame& frame) {
  switch (expr.kind) {
    case ExprKind::kConst: return expr.constant;
    case ExprKind::kName: return Lookup(expr.name, frame);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const ExprPtr& child : expr.children) items.push_back(Eval(*child, frame));
      return Value::MakeList(std::move(items),
                             expr.kind == ExprKind::kTuple ? ListKind::kTuple : ListKind::kList);
    }
    case ExprKind::kDict: {
      Dict dict;
      for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Value key = Eval(*expr.children[i], frame);
        if (!key.is_string()) {
          Fail(absl::StrCat("line ", expr.line, ": dict keys must be strings in kvserve templates, got ",
                            key.TypeName()));
        }
        dict.Set(key.as_string(), Eval(*expr.children[i + 1], frame));
      }
      return Value::MakeDict(std::move(dict));
    }
    case ExprKind::kGetAttr: return GetAttr(Eval(*expr.children[0], frame), expr.name);
    case ExprKind::kGetItem:
      return GetItem(Eval(*expr.children[0], frame), Eval(*expr.children[1], frame));
    case ExprKind::kSlice: return EvalSlice(expr, frame);
    case ExprKind::kCall: {
      Value callee = Eval(*expr.children[0], frame);
      CallArgs args = EvalArgs(expr, 1, frame);
      return Call(callee, args);
    }
    case ExprKind::kFilter: {
      Value input = Eval(*expr.children[0], frame);
      CallArgs args = EvalArgs(expr, 1, frame);
      return ApplyFilter(expr.name, input, args);
    }
    case ExprKind::kTest: {
      Value input = Eval(*expr.children[0], frame);
      CallArgs args = EvalArgs(expr, 1, frame);
      return Value(ApplyTest(expr.name, input, args) != expr.negated);
    }
    case ExprKind::kUnary: return UnaryOp(expr.name, Eval(*expr.children[0], frame));
    case ExprKind::kBinary:
      return BinaryOp(expr.name, Eval(*expr.children[0], frame), Eval(*expr.children[1], frame));
    case ExprKind::kAnd: {
      Value left = Eval(*expr.children[0], frame);
      return Truthy(left) ? Eval(*expr.children[1], frame) : left;
    }
    case ExprKind::kOr: {
      Value left = Eval(*expr.children[0], frame);
      return Truthy(left) ? left : Eval(*expr.children[1], frame);
    }
    case ExprKind::kCompare: {
      Value left = Eval(*expr.children[0], frame);
      for (size_t i = 0; i < expr.ops.size(); ++i) {
        Value right = Eval(*expr.children[i + 1], frame);
        const std::string& op = expr.ops[i];
        bool result;
        if (op == "==") {
          result = Equal(left, right);
        } else if (op == "!=") {
          result = !Equal(left, right);
        } else if (op == "in") {
          result = Contains(right, left);
        } else if (op == "notin") {
          result = !Contains(right, left);
        } else {
          result = Compare(left, right, op);
        }
        if (!result) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::kCondition:
      if (Truthy(Eval(*expr.children[0], frame))) return Eval(*expr.children[1], frame);
      if (expr.children[2]) return Eval(*expr.children[2], frame);
      return Value::MakeUndefined("the inline if-expression on line " + std::to_string(expr.line) +
                                  " evaluated to false and no else section was defined");
  }
  return Value();
}

Value Interpreter::EvalSlice(const Expr& expr, Frame& frame) {
  Value object = Eval(*expr.children[0], frame);
  Value bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (expr.children[i + 1]) bounds[i] = Eval(*expr.children[i + 1], frame);
  }
  FailIfUndefined(object);
  if (object.is_string()) {
    const std::string& s = object.as_string();
    std::vector<size_t> offsets = CodepointOffsets(s);
    std::string out;
    for (int64_t i : SliceIndices(static_cast<int64_t>(offsets.size()) - 1, bounds[0], bounds[1], bounds[2])) {
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    }
    return Value(std::move(out));
  }
  if (object.is_list() && (object.as_list().kind == ListKind::kList ||
                           object.as_list().kind == ListKind::kTuple)) {
    const List& list = object.as_list();
    std::vector<Value> out;
    for (int64_t i : SliceIndices(static_cast<int64_t>(list.items.size()), bounds[0], bounds[1], bounds[2])) {
      out.push_back(list.items[i]);
    }
    return Value::MakeList(std::move(out), list.kind);
  }
  // jinja2 turns the TypeError of slicing an unsliceable object into undefined.
  return Value::MakeUndefined(absl::StrCat(object.TypeName(), " object has no slice"));
}

Value Interpreter::GetAttr(const Value& object, const std::string& name) {
  FailIfUndefined(object);
  if (std::optional<Value> method = GetMethod(object, name)) return *method;
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().Find(name)) return *v;
  } else if (object.is_namespace()) {
    if (const Value* v = object.as_namespace().attributes.Find(name)) return *v;
  }
  return Value::MakeUndefined(name);
}

Value Interpreter::GetItem(const Value& object, const Value& key) {
  FailIfUndefined(object);
  if (object.is_dict() && key.is_string()) {
    if (const Value* v = object.as_dict().Find(key.as_string())) return *v;
  } else if (object.is_list() && IsIntegral(key) &&
             (object.as_list().kind == ListKind::kList || object.as_list().kind == ListKind::kTuple)) {
    const auto& items = object.as_list().items;
    int64_t i = key.as_integral();
    if (i < 0) i += static_cast<int64_t>(items.size());
    if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[i];
  } else if (object.is_string() && IsIntegral(key)) {
    std::vector<size_t> offsets = CodepointOffsets(object.as_string());
    int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    int64_t i = key.as_integral();
    if (i < 0) i += n;
    if (i >= 0 && i < n) return Value(object.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
  } else if (object.is_namespace() && key.is_string()) {
    if (const Value* v = object.as_namespace().attributes.Find(key.as_string())) return *v;
  }
  if (key.is_string()) {
    if (std::optional<Value> method = GetMethod(object, key.as_string())) return *method;
  }
  return Value::MakeUndefined(ToStr(key));
}

Value Interpreter::Call(const Value& callee, CallArgs& args) {
  FailIfUndefined(callee);
  if (!callee.is_callable()) Fail(absl::StrCat("'", callee.TypeName(), "' object is not callable"));
  return callee.as_callable().call(*this, args);
}

Value Interpreter::ApplyFilter(const std::string& name, const Value& input, CallArgs& args) {
  return RunFilter(*this, name, input, args);
}

bool Interpreter::ApplyTest(const std::string& name, const Value& input, CallArgs& args) {
  return RunTest(*this, name, input, args);
}

}  // namespace kvserve::chat_template
