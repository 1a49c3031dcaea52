#include "engine/text/chat_template/interpreter.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/filters.h"
#include "engine/text/chat_template/globals.h"
#include "engine/text/chat_template/methods.h"
#include "engine/text/chat_template/py_string.h"
#include "engine/text/chat_template/tests.h"

namespace kvserve::chat_template {
namespace {

// Python's recursion limit stops runaway macros with an error; so do we,
// well before the C++ stack runs out.
constexpr int kMaxCallDepth = 200;
// Bounds `'x' * n` and friends, which could otherwise exhaust memory.
constexpr size_t kMaxStringBytes = size_t{64} << 20;

[[noreturn]] void FailOperands(const std::string& op, const Value& a, const Value& b) {
  FailIfUndefined(a);
  FailIfUndefined(b);
  Fail(absl::StrCat("unsupported operand type(s) for ", op, ": '", a.TypeName(), "' and '",
                    b.TypeName(), "'"));
}

bool IsIntegral(const Value& v) { return v.is_int() || v.is_bool(); }

// Python ints are unbounded; ours are 64-bit and overflow is an error.
template <typename Op>
int64_t CheckedInt(Op op, int64_t a, int64_t b) {
  int64_t out;
  if (op(a, b, &out)) Fail("integer overflow (kvserve integers are 64-bit)");
  return out;
}
constexpr auto kAdd = [](int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); };
constexpr auto kSub = [](int64_t a, int64_t b, int64_t* out) { return __builtin_sub_overflow(a, b, out); };
constexpr auto kMul = [](int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); };

Value Repeat(const std::vector<Value>& items, ListKind kind, int64_t times) {
  std::vector<Value> out;
  if (times > 0) {
    if (items.size() * static_cast<size_t>(times) > kMaxStringBytes) Fail("repetition too large");
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  }
  return Value::MakeList(std::move(out), kind);
}

std::string RepeatString(const std::string& s, int64_t times) {
  std::string out;
  if (times <= 0) return out;
  if (s.size() * static_cast<size_t>(times) > kMaxStringBytes) Fail("repetition too large");
  for (int64_t i = 0; i < times; ++i) out += s;
  return out;
}

// Python's slice.indices(): clamps start/stop for a sequence of length n.
std::vector<int64_t> SliceIndices(int64_t n, const Value& start_v, const Value& stop_v,
                                  const Value& step_v) {
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!IsIntegral(v)) Fail(absl::StrCat("slice ", what, " must be an integer or None, not ", v.TypeName()));
    return v.as_integral();
  };
  int64_t step = as_index(step_v, "step").value_or(1);
  if (step == 0) Fail("slice step cannot be zero");
  std::optional<int64_t> start = as_index(start_v, "start");
  std::optional<int64_t> stop = as_index(stop_v, "stop");
  auto clamp = [&](int64_t i, bool forward) {
    if (i < 0) i += n;
    if (forward) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  bool forward = step > 0;
  int64_t lo = start ? clamp(*start, forward) : (forward ? 0 : n - 1);
  int64_t hi = stop ? clamp(*stop, forward) : (forward ? n : -1);
  std::vector<int64_t> out;
  if (forward) {
    for (int64_t i = lo; i < hi; i += step) out.push_back(i);
  } else {
    for (int64_t i = lo; i > hi; i += step) out.push_back(i);
  }
  return out;
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
      Assign(stmt, scope, item);
      if (Truthy(Eval(*stmt.filter, scope))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    scope.vars.clear();
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
    case ExprKind::kUnary: return EvalUnary(expr.name, Eval(*expr.children[0], frame));
    case ExprKind::kBinary:
      return EvalBinary(expr.name, Eval(*expr.children[0], frame), Eval(*expr.children[1], frame));
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

Value Interpreter::EvalUnary(const std::string& op, const Value& operand) {
  if (op == "not") return Value(!Truthy(operand));
  FailIfUndefined(operand);
  if (!operand.is_number()) {
    Fail(absl::StrCat("bad operand type for unary ", op, ": '", operand.TypeName(), "'"));
  }
  if (op == "+") return operand.is_float() ? operand : Value(operand.as_integral());
  if (operand.is_float()) return Value(-operand.as_float());
  return Value(CheckedInt(kSub, 0, operand.as_integral()));
}

Value Interpreter::EvalBinary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(ToStr(a) + ToStr(b));
  const bool numbers = a.is_number() && b.is_number();
  const bool ints = IsIntegral(a) && IsIntegral(b);
  if (op == "+") {
    if (ints) {
      return Value(CheckedInt(kAdd, a.as_integral(), b.as_integral()));
    }
    if (numbers) return Value(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && a.as_list().kind == b.as_list().kind &&
        (a.as_list().kind == ListKind::kList || a.as_list().kind == ListKind::kTuple)) {
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::MakeList(std::move(items), a.as_list().kind);
    }
    FailOperands(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      return Value(CheckedInt(kSub, a.as_integral(), b.as_integral()));
    }
    if (numbers) return Value(a.as_double() - b.as_double());
    FailOperands(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      return Value(CheckedInt(kMul, a.as_integral(), b.as_integral()));
    }
    if (numbers) return Value(a.as_double() * b.as_double());
    if (a.is_string() && IsIntegral(b)) return Value(RepeatString(a.as_string(), b.as_integral()));
    if (IsIntegral(a) && b.is_string()) return Value(RepeatString(b.as_string(), a.as_integral()));
    if (a.is_list() && IsIntegral(b) && a.as_list().kind != ListKind::kGenerator &&
        a.as_list().kind != ListKind::kView) {
      return Repeat(a.as_list().items, a.as_list().kind, b.as_integral());
    }
    FailOperands(op, a, b);
  }
  if (op == "/") {
    if (!numbers) FailOperands(op, a, b);
    if (b.as_double() == 0.0) Fail("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return Value(PercentFormat(a.as_string(), b));
    if (!numbers) FailOperands(op, a, b);
    if (b.as_double() == 0.0) Fail(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    if (ints) {
      int64_t x = a.as_integral(), y = b.as_integral();
      if (x == INT64_MIN && y == -1) Fail("integer overflow (kvserve integers are 64-bit)");
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return op == "//" ? Value(q) : Value(r);
    }
    double x = a.as_double(), y = b.as_double();
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    if (op == "%") return Value(r);
    return Value(std::floor((x - r) / y + 0.0));
  }
  if (op == "**") {
    if (!numbers) FailOperands(op, a, b);
    if (ints && b.as_integral() >= 0) {
      int64_t base = a.as_integral(), exponent = b.as_integral(), result = 1;
      if (base == 0 || base == 1) return Value(exponent == 0 ? int64_t{1} : base);
      if (base == -1) return Value(exponent % 2 == 0 ? int64_t{1} : int64_t{-1});
      // |base| >= 2 overflows within 64 multiplications.
      for (int64_t e = exponent; e > 0; --e) {
        if (__builtin_mul_overflow(result, base, &result)) Fail("integer overflow (kvserve integers are 64-bit)");
      }
      return Value(result);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  Fail(absl::StrCat("unknown operator ", op));
}

}  // namespace kvserve::chat_template
