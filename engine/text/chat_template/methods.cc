#include "engine/text/chat_template/methods.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {
namespace {

using Method = std::function<Value(const Value& self, CallArgs& args)>;

Value Bind(const Value& self, const std::string& name, Method method) {
  return Value::MakeCallable(name, [self, method = std::move(method)](Interpreter&, CallArgs& args) {
    return method(self, args);
  });
}

Value StringList(std::vector<std::string> parts) {
  std::vector<Value> items;
  for (std::string& p : parts) items.emplace_back(std::move(p));
  return Value::MakeList(std::move(items));
}

// startswith/endswith take a string or a tuple of strings.
bool AffixMatch(const std::string& s, const Value& affix, bool prefix, const char* name) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) {
      Fail(absl::StrCat(name, " first arg must be str or a tuple of str, not ", a.TypeName()));
    }
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list() && affix.as_list().kind == ListKind::kTuple) {
    return std::any_of(affix.as_list().items.begin(), affix.as_list().items.end(), one);
  }
  return one(affix);
}

// Byte offset of code point index `i` (Python's start/end for str.find and
// friends), clamped like Python's slice indices.
size_t ByteOffset(const std::string& s, int64_t i) {
  std::vector<size_t> offsets = CodepointOffsets(s);
  int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  if (i < 0) i = std::max<int64_t>(0, i + n);
  return offsets[std::min(i, n)];
}

std::optional<Value> StringMethod(const Value& self, const std::string& name) {
  auto strip = [&](bool left, bool right) {
    return Bind(self, name, [name, left, right](const Value& s, CallArgs& a) {
      BoundArgs b(name, a, {"chars"});
      return Value(PyStrip(s.as_string(), b.OptionalString(0), left, right));
    });
  };
  auto no_args = [&](std::function<Value(const std::string&)> fn) {
    return Bind(self, name, [name, fn = std::move(fn)](const Value& s, CallArgs& a) {
      BoundArgs(name, a, {});
      return fn(s.as_string());
    });
  };
  if (name == "strip") return strip(true, true);
  if (name == "lstrip") return strip(true, false);
  if (name == "rstrip") return strip(false, true);
  if (name == "split" || name == "rsplit") {
    return Bind(self, name, [name](const Value& s, CallArgs& a) {
      BoundArgs b(name, a, {"sep", "maxsplit"});
      std::optional<std::string> sep = b.OptionalString(0);
      if (sep && sep->empty()) Fail("empty separator");
      return StringList(PySplit(s.as_string(), sep, b.Int(1, -1), name == "rsplit"));
    });
  }
  if (name == "splitlines") return no_args([](const std::string& s) { return StringList(PySplitLines(s)); });
  if (name == "startswith" || name == "endswith") {
    return Bind(self, name, [name](const Value& s, CallArgs& a) {
      BoundArgs b(name, a, {"prefix", "start", "end"});
      const std::string& str = s.as_string();
      size_t start = b.Has(1) && !b.Get(1).is_none() ? ByteOffset(str, b.Int(1, 0)) : 0;
      size_t end = b.Has(2) && !b.Get(2).is_none() ? ByteOffset(str, b.Int(2, 0)) : str.size();
      std::string window = end > start ? str.substr(start, end - start) : "";
      return Value(AffixMatch(window, b.Get(0), name == "startswith", name.c_str()));
    });
  }
  if (name == "upper") return no_args([](const std::string& s) { return Value(PyUpper(s)); });
  if (name == "lower") return no_args([](const std::string& s) { return Value(PyLower(s)); });
  if (name == "title") return no_args([](const std::string& s) { return Value(PyTitle(s)); });
  if (name == "capitalize") return no_args([](const std::string& s) { return Value(PyCapitalize(s)); });
  if (name == "isdigit") return no_args([](const std::string& s) { return Value(PyIsDigit(s)); });
  if (name == "isalpha") return no_args([](const std::string& s) { return Value(PyIsAlpha(s)); });
  if (name == "isspace") {
    return no_args([](const std::string& s) {
      return Value(!s.empty() && PyStrip(s, std::nullopt, true, true).empty());
    });
  }
  if (name == "islower") return no_args([](const std::string& s) { return Value(PyIsLower(s)); });
  if (name == "isupper") return no_args([](const std::string& s) { return Value(PyIsUpper(s)); });
  if (name == "replace") {
    return Bind(self, name, [](const Value& s, CallArgs& a) {
      BoundArgs b("replace", a, {"old", "new", "count"});
      return Value(PyReplace(s.as_string(), b.String(0, ""), b.String(1, ""), b.Int(2, -1)));
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    return Bind(self, name, [name](const Value& s, CallArgs& a) {
      BoundArgs b(name, a, {"affix"});
      std::string affix = b.String(0, "");
      const std::string& str = s.as_string();
      bool prefix = name == "removeprefix";
      if (AffixMatch(str, Value(affix), prefix, name.c_str())) {
        return Value(prefix ? str.substr(affix.size()) : str.substr(0, str.size() - affix.size()));
      }
      return s;
    });
  }
  if (name == "find" || name == "rfind" || name == "count") {
    return Bind(self, name, [name](const Value& s, CallArgs& a) {
      BoundArgs b(name, a, {"sub", "start", "end"});
      std::string sub = b.String(0, "");
      const std::string& str = s.as_string();
      size_t start = b.Has(1) && !b.Get(1).is_none() ? ByteOffset(str, b.Int(1, 0)) : 0;
      size_t end = b.Has(2) && !b.Get(2).is_none() ? ByteOffset(str, b.Int(2, 0)) : str.size();
      std::string window = end > start ? str.substr(start, end - start) : "";
      if (name == "count") {
        if (sub.empty()) return Value(static_cast<int64_t>(CountCodepoints(window) + 1));
        int64_t n = 0;
        for (size_t p = window.find(sub); p != std::string::npos; p = window.find(sub, p + sub.size())) ++n;
        return Value(n);
      }
      if (end < start) return Value(-1);
      size_t found = name == "find" ? window.find(sub) : window.rfind(sub);
      if (found == std::string::npos) return Value(-1);
      return Value(static_cast<int64_t>(CountCodepoints(str.substr(0, start + found))));
    });
  }
  if (name == "join") {
    return Bind(self, name, [](const Value& s, CallArgs& a) {
      BoundArgs b("join", a, {"iterable"});
      std::vector<std::string> parts;
      for (const Value& item : Iterate(b.Get(0))) {
        if (!item.is_string()) {
          Fail(absl::StrCat("sequence item ", parts.size(), ": expected str instance, ", item.TypeName(), " found"));
        }
        parts.push_back(item.as_string());
      }
      return Value(absl::StrJoin(parts, s.as_string()));
    });
  }
  if (name == "format") {
    return Bind(self, name, [](const Value& s, CallArgs& a) { return Value(PyFormat(s.as_string(), a)); });
  }
  return std::nullopt;
}

std::optional<Value> DictMethod(const Value& self, const std::string& name) {
  auto view = [&](int what) {
    return Bind(self, name, [name, what](const Value& d, CallArgs& a) {
      BoundArgs(name, a, {});
      std::vector<Value> items;
      for (const auto& [k, v] : d.as_dict().entries) {
        if (what == 0) items.push_back(Value::MakeList({Value(k), v}, ListKind::kTuple));
        if (what == 1) items.emplace_back(k);
        if (what == 2) items.push_back(v);
      }
      return Value::MakeList(std::move(items), ListKind::kView);
    });
  };
  if (name == "items") return view(0);
  if (name == "keys") return view(1);
  if (name == "values") return view(2);
  if (name == "get") {
    return Bind(self, name, [](const Value& d, CallArgs& a) {
      BoundArgs b("get", a, {"key", "default"});
      const Value& key = b.Get(0);
      if (key.is_string()) {
        if (const Value* v = d.as_dict().Find(key.as_string())) return *v;
      }
      return b.GetOr(1, Value::MakeNone());
    });
  }
  if (name == "copy") {
    return Bind(self, name, [](const Value& d, CallArgs& a) {
      BoundArgs("copy", a, {});
      return d;
    });
  }
  return std::nullopt;
}

std::optional<Value> ListMethod(const Value& self, const std::string& name) {
  if (name == "index" || name == "count") {
    return Bind(self, name, [name](const Value& l, CallArgs& a) {
      BoundArgs b(name, a, {"value"});
      const auto& items = l.as_list().items;
      int64_t n = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!Equal(items[i], b.Get(0))) continue;
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") Fail(absl::StrCat(Repr(b.Get(0)), " is not in list"));
      return Value(n);
    });
  }
  return std::nullopt;
}

bool IsMutator(const Value& self, const std::string& name) {
  static constexpr std::string_view kListMutators[] = {"append", "extend", "insert", "pop",
                                                       "remove", "clear",  "sort",   "reverse"};
  static constexpr std::string_view kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};
  if (self.is_list()) {
    return std::find(std::begin(kListMutators), std::end(kListMutators), name) != std::end(kListMutators);
  }
  if (self.is_dict()) {
    return std::find(std::begin(kDictMutators), std::end(kDictMutators), name) != std::end(kDictMutators);
  }
  return false;
}

}  // namespace

std::optional<Value> GetMethod(const Value& self, const std::string& name) {
  if (self.is_string()) return StringMethod(self, name);
  if (self.is_dict()) {
    if (std::optional<Value> m = DictMethod(self, name)) return m;
  }
  if (self.is_list() && (self.as_list().kind == ListKind::kList || self.as_list().kind == ListKind::kTuple)) {
    if (std::optional<Value> m = ListMethod(self, name)) return m;
  }
  if (IsMutator(self, name)) {
    // ImmutableSandboxedEnvironment: the method exists but calling it is refused.
    std::string type = self.TypeName();
    return Value::MakeCallable(name, [name, type](Interpreter&, CallArgs&) -> Value {
      Fail(absl::StrCat("access to attribute '", name, "' of '", type,
                        "' object is unsafe (templates cannot modify lists or dicts)"));
    });
  }
  return std::nullopt;
}

std::string PyFormat(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      else Fail("format(): single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos) Fail("format(): single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    bool repr = false;
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      repr = field.substr(bang + 1) == "r";
      field.erase(bang);
    }
    if (field.find(':') != std::string::npos) Fail("format(): format specs are not supported by kvserve");
    const Value* value = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) Fail("format(): replacement index out of range");
      value = &args.positional[auto_index++];
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t index = 0;
      if (!absl::SimpleAtoi(field, &index) || index >= args.positional.size()) {
        Fail("format(): replacement index out of range");
      }
      value = &args.positional[index];
    } else {
      for (const auto& [k, v] : args.keyword) {
        if (k == field) value = &v;
      }
      if (value == nullptr) Fail(absl::StrCat("format(): no argument named '", field, "'"));
    }
    out += repr ? Repr(*value) : ToStr(*value);
  }
  return out;
}

std::string PercentFormat(const std::string& format, const Value& args) {
  std::vector<Value> positional;
  if (args.is_list() && args.as_list().kind == ListKind::kTuple) {
    positional = args.as_list().items;
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) Fail("incomplete format");
    const Value* value = nullptr;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos || !args.is_dict()) Fail("format requires a mapping");
      value = args.as_dict().Find(format.substr(i + 1, close - i - 1));
      if (value == nullptr) Fail(absl::StrCat("KeyError: '", format.substr(i + 1, close - i - 1), "'"));
      i = close + 1;
    }
    std::string precision;
    if (i < format.size() && format[i] == '.') {
      while (++i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) precision += format[i];
    }
    if (i >= format.size()) Fail("incomplete format");
    char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (value == nullptr) {
      if (next >= positional.size()) Fail("not enough arguments for format string");
      value = &positional[next++];
    }
    switch (conv) {
      case 's': out += ToStr(*value); break;
      case 'r': out += Repr(*value); break;
      case 'd':
      case 'i':
        if (!value->is_number()) Fail(absl::StrCat("%", std::string(1, conv), " format: a real number is required, not ", value->TypeName()));
        out += absl::StrCat(value->is_float() ? static_cast<int64_t>(value->as_float()) : value->as_integral());
        break;
      case 'f': {
        if (!value->is_number()) Fail(absl::StrCat("%f format: a real number is required, not ", value->TypeName()));
        // Python takes any precision that fits in an int; kvserve stops at
        // 1,000 digits, so that a template cannot ask for gigabytes.
        int digits = 6;
        if (!precision.empty() && (!absl::SimpleAtoi(precision, &digits) || digits > 1000)) {
          Fail(absl::StrCat("%f format: precision ", precision, " is over kvserve's limit of 1000"));
        }
        const int size = std::snprintf(nullptr, 0, "%.*f", digits, value->as_double());
        std::string formatted(size_t(size) + 1, '\0');
        std::snprintf(formatted.data(), formatted.size(), "%.*f", digits, value->as_double());
        formatted.resize(size_t(size));
        out += formatted;
        break;
      }
      default: Fail(absl::StrCat("unsupported format character '", std::string(1, conv), "'"));
    }
  }
  // Python treats any non-tuple, non-str argument with __getitem__ (a dict, a
  // list) as a mapping, and leftover mappings are no error.
  bool mapping_like = args.is_dict() || (args.is_list() && args.as_list().kind == ListKind::kList);
  if (next < positional.size() && !mapping_like) Fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace kvserve::chat_template
