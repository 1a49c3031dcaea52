// jinja2's filters over sequences and mappings: length, list, join, first/last,
// select/reject(attr), map, sort, unique, dictsort, batch, min/max/sum, items,
// reverse. The lazy ones return generators, as in jinja2.
#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/filters_internal.h"
#include "engine/text/chat_template/interpreter.h"
#include "engine/text/chat_template/py_string.h"

namespace kvserve::chat_template {

// Follows a dotted attribute path ("function.name") the way jinja2's
// make_attrgetter does: item lookup first, integers for numeric parts.
Value GetPath(Interpreter& interp, Value value, const std::string& path) {
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    // A digit string too long for 64 bits indexes nothing; looked up as text
    // it finds nothing either (jinja2: an int too big to index, undefined).
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit) &&
                   absl::SimpleAtoi(part, &index);
    value = numeric ? interp.GetItem(value, Value(index)) : interp.GetItem(value, Value(part));
    if (dot == std::string::npos) return value;
    start = dot + 1;
  }
}

std::string AttributeArg(const BoundArgs& args, size_t i) {
  const Value& v = args.Get(i);
  if (v.is_int()) return absl::StrCat(v.as_int());
  return args.String(i, "");
}

namespace {

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
  // jinja2's generators start with `if value:`, so a falsy input (None, 0,
  // false, "") gives nothing instead of failing to iterate.
  if (!Truthy(input)) return Value::MakeList({}, ListKind::kGenerator);
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
  if (!Truthy(input)) return Value::MakeList({}, ListKind::kGenerator);  // as select's
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

// The key that sort/unique/min/max compare: lower-cased strings unless case
// sensitive, the attribute's value when one is named.
Value SortKey(Interpreter& interp, const Value& item, const std::string& attribute, bool case_sensitive) {
  Value key = attribute.empty() ? item : GetPath(interp, item, attribute);
  if (!case_sensitive && key.is_string()) return Value(PyLower(key.as_string()));
  return key;
}

}  // namespace

void AddSequenceFilters(FilterMap& filters) {
  FilterMap sequence_filters{
      {"batch", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs b("batch", a, {"linecount", "fill_with"});
         int64_t size = b.Int(0, 0);
         if (size <= 0) Fail("batch(): linecount must be a positive integer");
         std::vector<Value> batches, current;
         for (const Value& item : Iterate(v)) {
           current.push_back(item);
           if (static_cast<int64_t>(current.size()) == size) {
             batches.push_back(Value::MakeList(std::move(current)));
             current.clear();
           }
         }
         if (!current.empty()) {
           if (b.Has(1) && !b.Get(1).is_none()) {
             while (static_cast<int64_t>(current.size()) < size) current.push_back(b.Get(1));
           }
           batches.push_back(Value::MakeList(std::move(current)));
         }
         return Value::MakeList(std::move(batches), ListKind::kGenerator);
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
      {"first", [](Interpreter&, const Value& v, CallArgs& a) {
         BoundArgs("first", a, {});
         std::vector<Value> items = Iterate(v);
         return items.empty() ? Value::MakeUndefined("no first item, sequence was empty") : items.front();
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
  };
  filters.merge(sequence_filters);
}

}  // namespace kvserve::chat_template
