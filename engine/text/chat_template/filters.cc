#include "engine/text/chat_template/filters.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/filters_internal.h"
#include "engine/text/chat_template/interpreter.h"
#include "engine/text/chat_template/json_dump.h"
#include "engine/text/chat_template/methods.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {
namespace {


// jinja2 3.1's built-in filters that kvserve does not implement: templates
// using them parse (as in jinja2) and fail when the filter runs.
constexpr std::string_view kUnsupported[] = {"filesizeformat", "groupby", "pprint",   "random",
                                             "slice",          "striptags", "truncate", "urlencode",
                                             "urlize",         "wordcount", "wordwrap", "xmlattr"};

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
  // json.dumps drops the space after "," when indenting. (Move-assigned: GCC
  // 12 warns falsely (-Wrestrict) about assigning the literal here.)
  if (options.indent) options.item_separator = std::string(1, ',');
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
    if (!word.empty()) {
      size_t first_end = CodepointOffsets(word)[1];
      out += PyUpper(word.substr(0, first_end)) + PyLower(word.substr(first_end));
    }
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

const FilterMap& Filters() {
  static const FilterMap* filters = [] {
    auto* map = new FilterMap{
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
      {"center", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("center", a, {"width"});
         std::string s = ToStr(v);
         int64_t width = b.Int(0, 80);
         int64_t margin = width - static_cast<int64_t>(CountCodepoints(s));
         if (margin <= 0) return Value(s);
         // CPython's str.center puts the odd space on the left when width is odd.
         int64_t left = margin / 2 + (margin & width & 1);
         return Value(std::string(left, ' ') + s + std::string(margin - left, ' '));
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
      {"escape", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("escape", a, {});
         return Value(Escape(ToStr(v)));
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
         // jinja2 appends "\n" to its input, which only a string allows.
         if (!v.is_string()) {
           FailIfUndefined(v);
           Fail(absl::StrCat("indent(): expected a string, got ", v.TypeName()));
         }
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
      {"lower", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("lower", a, {});
         return Value(PyLower(ToStr(v)));
       }},
      {"replace", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("replace", a, {"old", "new", "count"});
         int64_t count = b.Has(2) && !b.Get(2).is_none() ? b.Int(2, -1) : -1;
         return Value(PyReplace(ToStr(v), ToStr(b.Get(0)), ToStr(b.Get(1)), count));
       }},
      {"round", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("round", a, {"precision", "method"});
         FailIfUndefined(v);
         if (!v.is_number()) Fail(absl::StrCat("round(): expected a number, got ", v.TypeName()));
         int64_t precision = b.Int(0, 0);
         std::string method = b.String(1, "common");
         double x = v.as_double();
         // round() of an int (or bool) is an int in Python.
         if (method == "common") return v.is_float() ? Value(PyRound(x, precision)) : Value(v.as_integral());
         double scale = std::pow(10.0, static_cast<double>(precision));
         if (method == "ceil") return Value(std::ceil(x * scale) / scale);
         if (method == "floor") return Value(std::floor(x * scale) / scale);
         Fail("round(): method must be 'common', 'ceil' or 'floor'");
       }},
      {"safe", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("safe", a, {});
         return Value(ToStr(v));
       }},
      {"string", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("string", a, {});
         return Value(ToStr(v));
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
      {"upper", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("upper", a, {});
         return Value(PyUpper(ToStr(v)));
       }},
    };
    AddSequenceFilters(*map);
    return map;
  }();
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
