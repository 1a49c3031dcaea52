#include "engine/text/chat_template/filters.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/interpreter.h"
#include "engine/text/chat_template/json_dump.h"
#include "engine/text/chat_template/methods.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {
namespace {

using FilterFn = std::function<Value(Interpreter&, const Value&, CallArgs&)>;

// jinja2 3.1's built-in filters that kvserve does not implement: templates
// using them parse (as in jinja2) and fail when the filter runs.
constexpr std::string_view kUnsupported[] = {
    "batch",  "center",    "filesizeformat", "groupby",  "pprint",   "random",
    "slice",  "striptags", "truncate",       "urlencode", "urlize",  "wordcount",
    "wordwrap", "xmlattr"};

// Follows a dotted attribute path ("function.name") the way jinja2's
// make_attrgetter does: item lookup first, integers for numeric parts.
Value GetPath(Interpreter& interp, Value value, const std::string& path) {
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    value = numeric ? interp.GetItem(value, Value(static_cast<int64_t>(std::stoll(part))))
                    : interp.GetItem(value, Value(part));
    if (dot == std::string::npos) return value;
    start = dot + 1;
  }
}

std::string AttributeArg(const BoundArgs& args, size_t i) {
  const Value& v = args.Get(i);
  if (v.is_int()) return absl::StrCat(v.as_int());
  return args.String(i, "");
}

// select/reject/selectattr/rejectattr: `args` after the sequence are
// [attribute,] test name, test arguments...
Value SelectOrReject(Interpreter& interp, const Value& input, CallArgs& args, bool select,
                     bool by_attribute, const char* filter_name) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) Fail(absl::StrCat(filter_name, "(): missing attribute name"));
    const Value& a = args.positional[next++];
    if (!a.is_string()) Fail(absl::StrCat(filter_name, "(): the attribute must be a string"));
    attribute = a.as_string();
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (next < args.positional.size()) {
    const Value& t = args.positional[next++];
    if (!t.is_string()) Fail(absl::StrCat(filter_name, "(): the test name must be a string"));
    test = t.as_string();
    test_args.positional.assign(args.positional.begin() + next, args.positional.end());
    test_args.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : Iterate(input)) {
    Value subject = by_attribute ? GetPath(interp, item, attribute) : item;
    CallArgs call = test_args;
    bool passed = test ? interp.ApplyTest(*test, subject, call) : Truthy(subject);
    if (passed == select) out.push_back(item);
  }
  return Value::MakeList(std::move(out), ListKind::kGenerator);
}

Value MapFilter(Interpreter& interp, const Value& input, CallArgs& args) {
  std::vector<Value> out;
  std::vector<Value> items = Iterate(input);
  if (args.positional.empty()) {
    BoundArgs bound("map", args, {"attribute", "default"});
    std::string attribute = AttributeArg(bound, 0);
    for (const Value& item : items) {
      Value v = GetPath(interp, item, attribute);
      if (v.is_undefined() && bound.Has(1)) v = bound.Get(1);
      out.push_back(std::move(v));
    }
  } else {
    const Value& name = args.positional[0];
    if (!name.is_string()) Fail("map(): the filter name must be a string");
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : items) {
      CallArgs call = rest;
      out.push_back(interp.ApplyFilter(name.as_string(), item, call));
    }
  }
  return Value::MakeList(std::move(out), ListKind::kGenerator);
}

Value ToJsonFilter(Interpreter&, const Value& input, CallArgs& args) {
  BoundArgs bound("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions options;
  options.ensure_ascii = bound.Bool(0, false);
  const Value& indent = bound.Get(1);
  if (indent.is_int() || indent.is_bool()) {
    options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_integral())), ' ');
  } else if (indent.is_string()) {
    options.indent = indent.as_string();
  } else if (!indent.is_none() && !indent.is_undefined()) {
    Fail(absl::StrCat("tojson(): indent must be an integer or a string, not ", indent.TypeName()));
  }
  if (options.indent) options.item_separator = ",";
  const Value& separators = bound.Get(2);
  if (separators.is_list()) {
    const auto& items = separators.as_list().items;
    if (items.size() != 2 || !items[0].is_string() || !items[1].is_string()) {
      Fail("tojson(): separators must be two strings (item_separator, key_separator)");
    }
    options.item_separator = items[0].as_string();
    options.key_separator = items[1].as_string();
  } else if (!separators.is_none() && !separators.is_undefined()) {
    Fail("tojson(): separators must be a tuple of two strings");
  }
  options.sort_keys = bound.Bool(3, false);
  return Value(DumpJson(input, options));
}

// jinja2's do_title: each run after a separator ([-\s({\[<]) is capitalized.
std::string JinjaTitle(const std::string& s) {
  std::string out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out += PyUpper(word.substr(0, 1)) + PyLower(word.substr(1));
    word.clear();
  };
  for (char c : s) {
    bool separator = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
                     c == '\v' || c == '(' || c == '{' || c == '[' || c == '<';
    if (separator) {
      flush();
      out += c;
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

std::string Indent(const std::string& text, const Value& width, bool first, bool blank) {
  std::string indentation = width.is_string() ? width.as_string()
                                              : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_integral())), ' ');
  std::vector<std::string> lines = PySplitLines(text + "\n");
  std::string out;
  if (blank) {
    out = absl::StrJoin(lines, "\n" + indentation);
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      out += "\n";
      if (!lines[i].empty()) out += indentation;
      out += lines[i];
    }
  }
  if (first) out = indentation + out;
  return out;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Python's round(x, n): round half to even on the exact binary value.
double PyRound(double x, int64_t digits) {
  double scale = std::pow(10.0, static_cast<double>(digits));
  double scaled = x * scale;
  if (!std::isfinite(scaled)) return x;
  int old_mode = std::fegetround();
  std::fesetround(FE_TONEAREST);
  double rounded = std::nearbyint(scaled) / scale;
  std::fesetround(old_mode);
  return rounded;
}

// The key that sort/unique/min/max compare: lower-cased strings unless case
// sensitive, the attribute's value when one is named.
Value SortKey(Interpreter& interp, const Value& item, const std::string& attribute, bool case_sensitive) {
  Value key = attribute.empty() ? item : GetPath(interp, item, attribute);
  if (!case_sensitive && key.is_string()) return Value(PyLower(key.as_string()));
  return key;
}

std::optional<int64_t> ParseInt(std::string s) {
  s = PyStrip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return std::nullopt;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size() || !std::all_of(s.begin() + i, s.end(), ::isdigit)) return std::nullopt;
  try {
    return std::stoll(s);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> ParseFloat(const std::string& text) {
  std::string s = PyStrip(text, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

const std::map<std::string_view, FilterFn>& Filters() {
  static const auto* filters = new std::map<std::string_view, FilterFn>{
      {"abs", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("abs", a, {});
         FailIfUndefined(v);
         if (v.is_float()) return Value(std::fabs(v.as_float()));
         if (v.is_int() || v.is_bool()) return Value(static_cast<int64_t>(std::llabs(v.as_integral())));
         Fail(absl::StrCat("bad operand type for abs(): '", v.TypeName(), "'"));
       }},
      {"attr", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("attr", a, {"name"});
         return interp.GetAttr(v, b.String(0, ""));
       }},
      {"capitalize", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("capitalize", a, {});
         return Value(PyCapitalize(ToStr(v)));
       }},
      {"default", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("default", a, {"default_value", "boolean"});
         bool use_default = v.is_undefined() || (b.Bool(1, false) && !Truthy(v));
         return use_default ? b.GetOr(0, Value("")) : v;
       }},
      {"dictsort", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("dictsort", a, {"case_sensitive", "by", "reverse"});
         if (!v.is_dict()) Fail("dictsort(): you can only sort a mapping");
         std::string by = b.String(1, "key");
         if (by != "key" && by != "value") Fail("dictsort(): 'by' must be 'key' or 'value'");
         bool case_sensitive = b.Bool(0, false);
         std::vector<Value> pairs;
         for (const auto& [k, val] : v.as_dict().entries) {
           pairs.push_back(Value::MakeList({Value(k), val}, ListKind::kTuple));
         }
         size_t index = by == "key" ? 0 : 1;
         std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
           return Compare(SortKey(interp, x.as_list().items[index], "", case_sensitive),
                          SortKey(interp, y.as_list().items[index], "", case_sensitive), "<");
         });
         if (b.Bool(2, false)) std::reverse(pairs.begin(), pairs.end());
         return Value::MakeList(std::move(pairs));
       }},
      {"escape", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("escape", a, {});
         return Value(Escape(ToStr(v)));
       }},
      {"first", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("first", a, {});
         std::vector<Value> items = Iterate(v);
         return items.empty() ? Value::MakeUndefined("no first item, sequence was empty") : items.front();
       }},
      {"float", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("float", a, {"default"});
         FailIfUndefined(v);
         if (v.is_number()) return Value(v.as_double());
         if (v.is_string()) {
           if (std::optional<double> d = ParseFloat(v.as_string())) return Value(*d);
         }
         return b.GetOr(0, Value(0.0));
       }},
      {"forceescape", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("forceescape", a, {});
         return Value(Escape(ToStr(v)));
       }},
      {"format", [](Interpreter&, const Value& v, CallArgs& a) {
         if (!a.positional.empty() && !a.keyword.empty()) {
           Fail("format(): can't handle positional and keyword arguments at the same time");
         }
         if (!a.keyword.empty()) {
           Dict d;
           for (auto& [k, val] : a.keyword) d.Set(k, val);
           return Value(PercentFormat(ToStr(v), Value::MakeDict(std::move(d))));
         }
         return Value(PercentFormat(ToStr(v), Value::MakeList(a.positional, ListKind::kTuple)));
       }},
      {"indent", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("indent", a, {"width", "first", "blank"});
         Value width = b.GetOr(0, Value(4));
         if (!width.is_string() && !width.is_int() && !width.is_bool()) {
           Fail("indent(): width must be an integer or a string");
         }
         return Value(Indent(ToStr(v), width, b.Bool(1, false), b.Bool(2, false)));
       }},
      {"int", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("int", a, {"default", "base"});
         FailIfUndefined(v);
         if (v.is_int() || v.is_bool()) return Value(v.as_integral());
         if (v.is_float()) {
           if (!std::isfinite(v.as_float())) return b.GetOr(0, Value(0));
           return Value(static_cast<int64_t>(std::trunc(v.as_float())));
         }
         if (v.is_string()) {
           if (b.Int(1, 10) == 10) {
             if (std::optional<int64_t> i = ParseInt(v.as_string())) return Value(*i);
           }
           if (std::optional<double> d = ParseFloat(v.as_string()); d && std::isfinite(*d)) {
             return Value(static_cast<int64_t>(std::trunc(*d)));
           }
         }
         return b.GetOr(0, Value(0));
       }},
      {"items", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("items", a, {});
         std::vector<Value> pairs;
         if (v.is_undefined()) return Value::MakeList({}, ListKind::kGenerator);
         if (!v.is_dict()) Fail("items(): can only get item pairs from a mapping");
         for (const auto& [k, val] : v.as_dict().entries) {
           pairs.push_back(Value::MakeList({Value(k), val}, ListKind::kTuple));
         }
         return Value::MakeList(std::move(pairs), ListKind::kGenerator);
       }},
      {"join", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("join", a, {"d", "attribute"});
         std::string separator = ToStr(b.GetOr(0, Value("")));
         std::vector<std::string> parts;
         for (const Value& item : Iterate(v)) {
           parts.push_back(ToStr(b.Has(1) ? GetPath(interp, item, AttributeArg(b, 1)) : item));
         }
         return Value(absl::StrJoin(parts, separator));
       }},
      {"last", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("last", a, {});
         if (v.is_list() && v.as_list().kind == ListKind::kGenerator) {
           Fail("last(): 'generator' object is not reversible");
         }
         std::vector<Value> items = Iterate(v);
         return items.empty() ? Value::MakeUndefined("no last item, sequence was empty") : items.back();
       }},
      {"length", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("length", a, {});
         return Value(Length(v));
       }},
      {"list", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("list", a, {});
         return Value::MakeList(Iterate(v));
       }},
      {"lower", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("lower", a, {});
         return Value(PyLower(ToStr(v)));
       }},
      {"map", MapFilter},
      {"max", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("max", a, {"case_sensitive", "attribute"});
         std::vector<Value> items = Iterate(v);
         if (items.empty()) return Value::MakeUndefined("no largest item, sequence was empty");
         std::string attribute = b.Has(1) ? AttributeArg(b, 1) : "";
         bool cs = b.Bool(0, false);
         size_t best = 0;
         for (size_t i = 1; i < items.size(); ++i) {
           if (Compare(SortKey(interp, items[i], attribute, cs), SortKey(interp, items[best], attribute, cs), ">")) best = i;
         }
         return items[best];
       }},
      {"min", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("min", a, {"case_sensitive", "attribute"});
         std::vector<Value> items = Iterate(v);
         if (items.empty()) return Value::MakeUndefined("no smallest item, sequence was empty");
         std::string attribute = b.Has(1) ? AttributeArg(b, 1) : "";
         bool cs = b.Bool(0, false);
         size_t best = 0;
         for (size_t i = 1; i < items.size(); ++i) {
           if (Compare(SortKey(interp, items[i], attribute, cs), SortKey(interp, items[best], attribute, cs), "<")) best = i;
         }
         return items[best];
       }},
      {"reject", [](Interpreter& interp, const Value& v, CallArgs& a) {
         return SelectOrReject(interp, v, a, false, false, "reject");
       }},
      {"rejectattr", [](Interpreter& interp, const Value& v, CallArgs& a) {
         return SelectOrReject(interp, v, a, false, true, "rejectattr");
       }},
      {"replace", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("replace", a, {"old", "new", "count"});
         int64_t count = b.Has(2) && !b.Get(2).is_none() ? b.Int(2, -1) : -1;
         return Value(PyReplace(ToStr(v), ToStr(b.Get(0)), ToStr(b.Get(1)), count));
       }},
      {"reverse", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("reverse", a, {});
         if (v.is_string()) {
           std::vector<std::string> chars = SplitCodepoints(v.as_string());
           std::reverse(chars.begin(), chars.end());
           return Value(absl::StrJoin(chars, ""));
         }
         if (v.is_list() && v.as_list().kind == ListKind::kGenerator) {
           Fail("reverse(): argument is not reversible");
         }
         std::vector<Value> items = Iterate(v);
         std::reverse(items.begin(), items.end());
         return Value::MakeList(std::move(items), ListKind::kGenerator);
       }},
      {"round", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("round", a, {"precision", "method"});
         FailIfUndefined(v);
         if (!v.is_number()) Fail(absl::StrCat("round(): expected a number, got ", v.TypeName()));
         int64_t precision = b.Int(0, 0);
         std::string method = b.String(1, "common");
         double x = v.as_double();
         if (method == "common") return Value(PyRound(x, precision));
         double scale = std::pow(10.0, static_cast<double>(precision));
         if (method == "ceil") return Value(std::ceil(x * scale) / scale);
         if (method == "floor") return Value(std::floor(x * scale) / scale);
         Fail("round(): method must be 'common', 'ceil' or 'floor'");
       }},
      {"safe", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("safe", a, {});
         return Value(ToStr(v));
       }},
      {"select", [](Interpreter& interp, const Value& v, CallArgs& a) {
         return SelectOrReject(interp, v, a, true, false, "select");
       }},
      {"selectattr", [](Interpreter& interp, const Value& v, CallArgs& a) {
         return SelectOrReject(interp, v, a, true, true, "selectattr");
       }},
      {"sort", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("sort", a, {"reverse", "case_sensitive", "attribute"});
         std::vector<Value> items = Iterate(v);
         std::string attribute = b.Has(2) ? AttributeArg(b, 2) : "";
         bool cs = b.Bool(1, false);
         bool reverse = b.Bool(0, false);
         std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
           return Compare(SortKey(interp, reverse ? y : x, attribute, cs),
                          SortKey(interp, reverse ? x : y, attribute, cs), "<");
         });
         return Value::MakeList(std::move(items));
       }},
      {"string", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("string", a, {});
         return Value(ToStr(v));
       }},
      {"sum", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("sum", a, {"attribute", "start"});
         Value total = b.GetOr(1, Value(0));
         for (const Value& item : Iterate(v)) {
           Value x = b.Has(0) ? GetPath(interp, item, AttributeArg(b, 0)) : item;
           FailIfUndefined(x);
           if (!x.is_number() || !total.is_number()) Fail("sum(): can only add numbers");
           if (x.is_float() || total.is_float()) {
             total = Value(total.as_double() + x.as_double());
           } else {
             total = Value(total.as_integral() + x.as_integral());
           }
         }
         return total;
       }},
      {"title", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("title", a, {});
         return Value(JinjaTitle(ToStr(v)));
       }},
      {"tojson", ToJsonFilter},
      {"trim", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("trim", a, {"chars"});
         return Value(PyStrip(ToStr(v), b.OptionalString(0), true, true));
       }},
      {"unique", [](Interpreter& interp, const Value& v, CallArgs& a) {
         BoundArgs b("unique", a, {"case_sensitive", "attribute"});
         std::string attribute = b.Has(1) ? AttributeArg(b, 1) : "";
         bool cs = b.Bool(0, false);
         std::vector<Value> seen, out;
         for (const Value& item : Iterate(v)) {
           Value key = SortKey(interp, item, attribute, cs);
           bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equal(s, key); });
           if (dup) continue;
           seen.push_back(key);
           out.push_back(item);
         }
         return Value::MakeList(std::move(out), ListKind::kGenerator);
       }},
      {"upper", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("upper", a, {});
         return Value(PyUpper(ToStr(v)));
       }},
  };
  return *filters;
}

const FilterFn* FindFilter(std::string_view name) {
  if (name == "d") name = "default";
  if (name == "count") name = "length";
  if (name == "e") name = "escape";
  auto it = Filters().find(name);
  return it == Filters().end() ? nullptr : &it->second;
}

}  // namespace

bool IsKnownFilter(std::string_view name) {
  if (FindFilter(name) != nullptr) return true;
  return std::find(std::begin(kUnsupported), std::end(kUnsupported), name) != std::end(kUnsupported);
}

Value RunFilter(Interpreter& interp, std::string_view name, const Value& input, CallArgs& args) {
  const FilterFn* filter = FindFilter(name);
  if (filter == nullptr) {
    if (IsKnownFilter(name)) Fail(absl::StrCat("the '", std::string(name), "' filter is not supported by kvserve"));
    Fail(absl::StrCat("no filter named '", std::string(name), "'"));
  }
  return (*filter)(interp, input, args);
}

}  // namespace kvserve::chat_template
