#include "engine/text/chat_template/tests.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {
namespace {

using TestFn = std::function<bool(const Value&, CallArgs&)>;

TestFn NoArgs(std::string_view name, std::function<bool(const Value&)> fn) {
  return [name, fn = std::move(fn)](const Value& v, CallArgs& a) {
    BoundArgs(name, a, {});
    return fn(v);
  };
}

TestFn Comparison(std::string_view name, std::function<bool(const Value&, const Value&)> fn) {
  return [name, fn = std::move(fn)](const Value& v, CallArgs& a) {
    BoundArgs b(name, a, {"other"});
    return fn(v, b.Get(0));
  };
}

bool IsIntegralNotBool(const Value& v) { return v.is_int(); }

int64_t RequireInt(const Value& v, const char* test) {
  FailIfUndefined(v);
  if (!v.is_int() && !v.is_bool()) {
    if (v.is_float()) return static_cast<int64_t>(v.as_float());  // only parity matters below
    Fail(absl::StrCat("the '", test, "' test needs a number, got ", v.TypeName()));
  }
  return v.as_integral();
}

const std::map<std::string_view, TestFn>& Tests() {
  static const auto* tests = new std::map<std::string_view, TestFn>{
      {"boolean", NoArgs("boolean", [](const Value& v) { return v.is_bool(); })},
      // jinja2's Undefined defines __call__ (calling it fails), so it counts.
      {"callable", NoArgs("callable", [](const Value& v) { return v.is_callable() || v.is_undefined(); })},
      {"defined", NoArgs("defined", [](const Value& v) { return !v.is_undefined(); })},
      {"undefined", NoArgs("undefined", [](const Value& v) { return v.is_undefined(); })},
      {"none", NoArgs("none", [](const Value& v) { return v.is_none(); })},
      {"true", NoArgs("true", [](const Value& v) { return v.is_bool() && v.as_bool(); })},
      {"false", NoArgs("false", [](const Value& v) { return v.is_bool() && !v.as_bool(); })},
      {"string", NoArgs("string", [](const Value& v) { return v.is_string(); })},
      {"number", NoArgs("number", [](const Value& v) { return v.is_number(); })},
      {"integer", NoArgs("integer", IsIntegralNotBool)},
      {"float", NoArgs("float", [](const Value& v) { return v.is_float(); })},
      {"mapping", NoArgs("mapping", [](const Value& v) { return v.is_dict(); })},
      // Python's iter() accepts strings, containers, generators and jinja2's Undefined.
      {"iterable", NoArgs("iterable", [](const Value& v) {
         return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
       })},
      // jinja2 checks for len() and __getitem__: dicts and Undefined pass, generators do not.
      {"sequence", NoArgs("sequence", [](const Value& v) {
         return v.is_string() || v.is_dict() || v.is_undefined() ||
                (v.is_list() && v.as_list().kind != ListKind::kGenerator);
       })},
      // jinja2 tests str(value), so a dict printed in lower case "is lower".
      {"lower", NoArgs("lower", [](const Value& v) { return PyIsLower(ToStr(v)); })},
      {"upper", NoArgs("upper", [](const Value& v) { return PyIsUpper(ToStr(v)); })},
      {"odd", NoArgs("odd", [](const Value& v) {
         int64_t i = RequireInt(v, "odd");
         return ((i % 2) + 2) % 2 == 1;
       })},
      {"even", NoArgs("even", [](const Value& v) { return RequireInt(v, "even") % 2 == 0; })},
      {"divisibleby", [](const Value& v, CallArgs& a) {
         BoundArgs b("divisibleby", a, {"num"});
         int64_t n = RequireInt(b.Get(0), "divisibleby");
         if (n == 0) Fail("divisibleby: integer division or modulo by zero");
         return RequireInt(v, "divisibleby") % n == 0;
       }},
      {"in", [](const Value& v, CallArgs& a) {
         BoundArgs b("in", a, {"seq"});
         return Contains(b.Get(0), v);
       }},
      {"eq", Comparison("eq", [](const Value& x, const Value& y) { return Equal(x, y); })},
      {"ne", Comparison("ne", [](const Value& x, const Value& y) { return !Equal(x, y); })},
      {"lt", Comparison("lt", [](const Value& x, const Value& y) { return Compare(x, y, "<"); })},
      {"le", Comparison("le", [](const Value& x, const Value& y) { return Compare(x, y, "<="); })},
      {"gt", Comparison("gt", [](const Value& x, const Value& y) { return Compare(x, y, ">"); })},
      {"ge", Comparison("ge", [](const Value& x, const Value& y) { return Compare(x, y, ">="); })},
      {"sameas", Comparison("sameas", [](const Value& x, const Value& y) {
         // Python `is`: singletons compare by value; other objects by identity,
         // which for our immutable values means equal scalars are not the same.
         if (x.is_none() || x.is_bool() || x.is_undefined()) return x.kind() == y.kind() && Equal(x, y);
         return false;
       })},
  };
  return *tests;
}

std::string_view Canonical(std::string_view name) {
  if (name == "equalto" || name == "==") return "eq";
  if (name == "!=") return "ne";
  if (name == "lessthan" || name == "<") return "lt";
  if (name == "<=") return "le";
  if (name == "greaterthan" || name == ">") return "gt";
  if (name == ">=") return "ge";
  return name;
}

}  // namespace

bool IsKnownTest(std::string_view name) {
  name = Canonical(name);
  return Tests().count(name) > 0 || name == "escaped" || name == "filter" || name == "test";
}

bool RunTest(Interpreter&, std::string_view name, const Value& input, CallArgs& args) {
  std::string_view canonical = Canonical(name);
  auto it = Tests().find(canonical);
  if (it == Tests().end()) {
    if (IsKnownTest(name)) Fail(absl::StrCat("the '", std::string(name), "' test is not supported by kvserve"));
    Fail(absl::StrCat("no test named '", std::string(name), "'"));
  }
  return it->second(input, args);
}

}  // namespace kvserve::chat_template
