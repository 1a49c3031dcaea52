#include "engine/text/chat_template/operators.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/methods.h"

namespace kvserve::chat_template {
namespace {

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


}  // namespace

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

Value UnaryOp(const std::string& op, const Value& operand) {
  if (op == "not") return Value(!Truthy(operand));
  FailIfUndefined(operand);
  if (!operand.is_number()) {
    Fail(absl::StrCat("bad operand type for unary ", op, ": '", operand.TypeName(), "'"));
  }
  if (op == "+") return operand.is_float() ? operand : Value(operand.as_integral());
  if (operand.is_float()) return Value(-operand.as_float());
  return Value(CheckedInt(kSub, 0, operand.as_integral()));
}

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
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
    auto repeatable = [](const Value& v) {
      return v.is_list() && v.as_list().kind != ListKind::kGenerator && v.as_list().kind != ListKind::kView;
    };
    if (repeatable(a) && IsIntegral(b)) return Repeat(a.as_list().items, a.as_list().kind, b.as_integral());
    if (IsIntegral(a) && repeatable(b)) return Repeat(b.as_list().items, b.as_list().kind, a.as_integral());
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
