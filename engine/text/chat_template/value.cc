#include "engine/text/chat_template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {

void Fail(std::string message) { throw TemplateError{std::move(message)}; }

const Value* Dict::Find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* Dict::Find(std::string_view key) {
  for (auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(std::string key, Value value) {
  if (Value* existing = Find(key)) {
    *existing = std::move(value);
  } else {
    entries.emplace_back(std::move(key), std::move(value));
  }
}

namespace {

int NestingOf(const std::vector<Value>& items) {
  int deepest = 0;
  for (const Value& v : items) deepest = std::max(deepest, v.Nesting());
  if (deepest + 1 > kMaxValueNesting) {
    Fail(absl::StrCat("lists and dicts nest more than ", kMaxValueNesting, " levels deep"));
  }
  return deepest + 1;
}

}  // namespace

int Value::Nesting() const {
  if (is_list()) return as_list().depth;
  if (is_dict()) return as_dict().depth;
  return 0;
}

Value Value::MakeList(std::vector<Value> items, ListKind kind) {
  auto list = std::make_shared<List>();
  list->kind = kind;
  list->depth = NestingOf(items);
  list->items = std::move(items);
  return Value(Data(std::shared_ptr<const List>(std::move(list))));
}

Value Value::MakeDict(Dict dict) {
  int deepest = 0;
  for (const auto& [k, v] : dict.entries) deepest = std::max(deepest, v.Nesting());
  if (deepest + 1 > kMaxValueNesting) {
    Fail(absl::StrCat("lists and dicts nest more than ", kMaxValueNesting, " levels deep"));
  }
  dict.depth = deepest + 1;
  return Value(Data(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(dict)))));
}

Value Value::MakeCallable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  return Value(Data(std::shared_ptr<const Callable>(
      std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}))));
}

Value Value::MakeNamespace(Dict attributes) {
  auto ns = std::make_shared<Namespace>();
  ns->attributes = std::move(attributes);
  return Value(Data(std::move(ns)));
}

std::string Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList:
      switch (as_list().kind) {
        case ListKind::kList: return "list";
        case ListKind::kTuple: return "tuple";
        case ListKind::kGenerator: return "generator";
        case ListKind::kView: return "dict view";
      }
      return "list";
    case Kind::kDict: return "dict";
    case Kind::kCallable: return "function";
    case Kind::kNamespace: return "Namespace";
  }
  return "object";
}

bool Truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return false;
    case Value::Kind::kBool: return value.as_bool();
    case Value::Kind::kInt: return value.as_int() != 0;
    case Value::Kind::kFloat: return value.as_float() != 0.0;
    case Value::Kind::kString: return !value.as_string().empty();
    case Value::Kind::kList:
      return value.as_list().kind == ListKind::kGenerator || !value.as_list().items.empty();
    case Value::Kind::kDict: return !value.as_dict().entries.empty();
    case Value::Kind::kCallable:
    case Value::Kind::kNamespace: return true;
  }
  return false;
}

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then laid out the way
  // Python's float_repr_style 'short' does: fixed for 1e-4 <= |x| < 1e16.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, end);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(exponent) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, exponent + 1);
      out += ".";
      out += digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += ".";
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += exp_buf;
  return out;
}

namespace {

std::string StringRepr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string SequenceRepr(const List& list) {
  std::string out;
  const char* open = list.kind == ListKind::kTuple ? "(" : "[";
  const char* close = list.kind == ListKind::kTuple ? ")" : "]";
  if (list.kind == ListKind::kGenerator) return "<generator object>";
  out += open;
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i > 0) out += ", ";
    out += Repr(list.items[i]);
  }
  if (list.kind == ListKind::kTuple && list.items.size() == 1) out += ",";
  out += close;
  return out;
}

std::string DictRepr(const Dict& dict) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : dict.entries) {
    if (!first) out += ", ";
    first = false;
    absl::StrAppend(&out, StringRepr(k), ": ", Repr(v));
  }
  out += "}";
  return out;
}

}  // namespace

std::string Repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kString: return StringRepr(value.as_string());
    default: return ToStr(value);
  }
}

std::string ToStr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return absl::StrCat(value.as_int());
    case Value::Kind::kFloat: return FloatRepr(value.as_float());
    case Value::Kind::kString: return value.as_string();
    case Value::Kind::kList: return SequenceRepr(value.as_list());
    case Value::Kind::kDict: return DictRepr(value.as_dict());
    case Value::Kind::kCallable: return absl::StrCat("<function ", value.as_callable().name, ">");
    case Value::Kind::kNamespace:
      return absl::StrCat("<Namespace ", DictRepr(value.as_namespace().attributes), ">");
  }
  return "";
}

void FailIfUndefined(const Value& value) {
  if (value.is_undefined()) Fail(absl::StrCat("'", value.undefined_name(), "' is undefined"));
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_integral() == b.as_integral();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      // A list never equals a tuple in Python; generators compare by identity.
      if ((x.kind == ListKind::kTuple) != (y.kind == ListKind::kTuple)) return false;
      if (x.kind == ListKind::kGenerator || y.kind == ListKind::kGenerator) return &x == &y;
      if (x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable: return &a.as_callable() == &b.as_callable();
    case Value::Kind::kNamespace: return &a.as_namespace() == &b.as_namespace();
    default: return false;
  }
}

namespace {

// -1, 0, 1 like Python's ordering of a and b; fails on unorderable types.
int Order(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_integral(), y = b.as_integral();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code point order, which is Python's.
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.as_list().kind == b.as_list().kind &&
      a.as_list().kind != ListKind::kGenerator) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equal(x[i], y[i])) return Order(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  FailIfUndefined(a);
  FailIfUndefined(b);
  Fail(absl::StrCat("'", std::string(op), "' not supported between instances of '", a.TypeName(), "' and '",
                    b.TypeName(), "'"));
}

}  // namespace

bool Compare(const Value& a, const Value& b, std::string_view op) {
  int order = Order(a, b, op);
  if (op == "<") return order < 0;
  if (op == "<=") return order <= 0;
  if (op == ">") return order > 0;
  return order >= 0;
}

bool Contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kString:
      if (!needle.is_string()) {
        Fail(absl::StrCat("'in <string>' requires string as left operand, not ", needle.TypeName()));
      }
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::kDict:
      // Python hashes the needle first: lists, dicts and namespaces cannot be keys.
      if (needle.is_dict() || needle.is_namespace() ||
          (needle.is_list() && needle.as_list().kind != ListKind::kTuple)) {
        Fail(absl::StrCat("unhashable type: '", needle.TypeName(), "'"));
      }
      return needle.is_string() && haystack.as_dict().Find(needle.as_string()) != nullptr;
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kList:
      for (const Value& item : haystack.as_list().items) {
        if (Equal(item, needle)) return true;
      }
      return false;
    default:
      Fail(absl::StrCat("argument of type '", haystack.TypeName(), "' is not iterable"));
  }
}

std::vector<Value> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return value.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, v] : value.as_dict().entries) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (std::string& c : SplitCodepoints(value.as_string())) chars.emplace_back(std::move(c));
      return chars;
    }
    default: Fail(absl::StrCat("'", value.TypeName(), "' object is not iterable"));
  }
}

int64_t Length(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(CountCodepoints(value.as_string()));
    case Value::Kind::kList:
      if (value.as_list().kind == ListKind::kGenerator) {
        Fail("object of type 'generator' has no len()");
      }
      return static_cast<int64_t>(value.as_list().items.size());
    case Value::Kind::kDict: return static_cast<int64_t>(value.as_dict().entries.size());
    default: Fail(absl::StrCat("object of type '", value.TypeName(), "' has no len()"));
  }
}

}  // namespace kvserve::chat_template
