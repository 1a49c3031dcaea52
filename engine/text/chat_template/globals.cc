#include "engine/text/chat_template/globals.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/arguments.h"

namespace kvserve::chat_template {
namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value Range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) Fail("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) {
      FailIfUndefined(v);
      Fail(absl::StrCat("'", v.TypeName(), "' object cannot be interpreted as an integer"));
    }
    n.push_back(v.as_integral());
  }
  int64_t start = 0, stop = 0, step = 1;
  if (n.size() == 1) {
    stop = n[0];
  } else if (n.size() == 2 || n.size() == 3) {
    start = n[0];
    stop = n[1];
    if (n.size() == 3) step = n[2];
  } else {
    Fail(absl::StrCat("range expected 1 to 3 arguments, got ", n.size()));
  }
  if (step == 0) Fail("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= kMaxRange) {
      Fail(absl::StrCat("range too big: the sandbox blocks ranges larger than ", kMaxRange));
    }
    items.emplace_back(i);
  }
  return Value::MakeList(std::move(items));
}

// dict(mapping, **kwargs) and namespace(mapping, **kwargs).
Dict DictFromArgs(const char* name, CallArgs& args) {
  Dict dict;
  if (args.positional.size() > 1) Fail(absl::StrCat(name, "() takes at most 1 positional argument"));
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      dict = source.as_dict();
    } else if (source.is_namespace()) {
      dict = source.as_namespace().attributes;
    } else {
      for (const Value& pair : Iterate(source)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2 || !pair.as_list().items[0].is_string()) {
          Fail(absl::StrCat(name, "(): expected a mapping or pairs of (string key, value)"));
        }
        dict.Set(pair.as_list().items[0].as_string(), pair.as_list().items[1]);
      }
    }
  }
  for (auto& [k, v] : args.keyword) dict.Set(k, v);
  return dict;
}

Value StrftimeNow(Interpreter&, CallArgs& args) {
  BoundArgs b("strftime_now", args, {"format"});
  std::string format = b.String(0, "");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value("");
  std::string buf(256 + format.size() * 16, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
  buf.resize(n);
  return Value(buf);
}

}  // namespace

std::optional<Value> LookupGlobal(std::string_view name) {
  if (name == "range") return Value::MakeCallable("range", Range);
  if (name == "dict") {
    return Value::MakeCallable("dict", [](Interpreter&, CallArgs& args) {
      return Value::MakeDict(DictFromArgs("dict", args));
    });
  }
  if (name == "namespace") {
    return Value::MakeCallable("namespace", [](Interpreter&, CallArgs& args) {
      return Value::MakeNamespace(DictFromArgs("namespace", args));
    });
  }
  if (name == "raise_exception") {
    return Value::MakeCallable("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
      BoundArgs b("raise_exception", args, {"message"});
      throw TemplateError{ToStr(b.Get(0)), /*raised_by_template=*/true};
    });
  }
  if (name == "strftime_now") return Value::MakeCallable("strftime_now", StrftimeNow);
  return std::nullopt;
}

}  // namespace kvserve::chat_template
