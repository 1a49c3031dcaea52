// The values a template computes with, modelled on the Python objects jinja2
// hands around: undefined, None, bool, int, float, str, list (and tuples,
// generators, dict views, which differ from lists in a few observable ways),
// insertion-ordered dict, callables (filters' helpers, bound methods, macros)
// and namespace(), the one mutable object (ImmutableSandboxedEnvironment
// forbids changing lists and dicts).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kvserve::chat_template {

class Value;
class Interpreter;

/// Thrown inside the interpreter and turned into an absl::Status at the API
/// boundary: the evaluator is deeply recursive, and every operation can fail.
struct TemplateError {
  std::string message;
  bool raised_by_template = false;  // raise_exception(...)
};
[[noreturn]] void Fail(std::string message);

/// What a list value stands for in Python; all are immutable sequences here.
enum class ListKind {
  kList,       // [a, b]
  kTuple,      // (a, b): dict items, tuple literals
  kGenerator,  // select/map/...: no len(), no indexing, always truthy
  kView,       // dict.items()/keys()/values(): len() but no indexing
};

/// How deeply lists and dicts may nest, in a template's values as in the
/// caller's JSON: it bounds the recursion of printing, comparing and dumping
/// them (Python would raise RecursionError somewhere near here too).
inline constexpr int kMaxValueNesting = 256;

struct List {
  ListKind kind = ListKind::kList;
  std::vector<Value> items;
  int depth = 1;  // 1 + the deepest item's nesting
};

// Insertion-ordered like a Python dict; keys are strings (JSON objects).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  int depth = 1;  // set by Value::MakeDict
  const Value* Find(std::string_view key) const;
  Value* Find(std::string_view key);
  void Set(std::string key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> call;
};

struct Undefined {
  std::string name;  // for the error message: "'name' is undefined"
};
struct None {};

/// A namespace() object: attributes set with {% set ns.x = ... %} are seen by
/// every holder, across loop scopes.
struct Namespace {
  Dict attributes;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable, kNamespace };

  Value() : data_(Undefined{}) {}
  static Value MakeUndefined(std::string name) { return Value(Data(Undefined{std::move(name)})); }
  static Value MakeNone() { return Value(Data(None{})); }
  Value(bool b) : data_(b) {}
  Value(int64_t i) : data_(i) {}
  Value(int i) : data_(static_cast<int64_t>(i)) {}
  Value(double d) : data_(d) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  static Value MakeList(std::vector<Value> items, ListKind kind = ListKind::kList);
  static Value MakeDict(Dict dict);
  static Value MakeCallable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);
  static Value MakeNamespace(Dict attributes);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // Python's numbers.Number: bool counts.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Integer value of a bool or int (Python treats True as 1).
  int64_t as_integral() const { return is_bool() ? (as_bool() ? 1 : 0) : as_int(); }
  double as_double() const { return is_float() ? as_float() : static_cast<double>(as_integral()); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const std::string& undefined_name() const { return std::get<Undefined>(data_).name; }

  /// Python's type name, for error messages ("str", "dict", "list", ...).
  std::string TypeName() const;
  /// 0 for scalars; 1 + the deepest element for lists and dicts.
  int Nesting() const;

 private:
  using Data = std::variant<Undefined, None, bool, int64_t, double, std::string,
                            std::shared_ptr<const List>, std::shared_ptr<const Dict>,
                            std::shared_ptr<const Callable>, std::shared_ptr<Namespace>>;
  explicit Value(Data data) : data_(std::move(data)) {}

  Data data_;
};

/// Python's bool(value).
bool Truthy(const Value& value);
/// Python's str(value); undefined prints as "" (jinja2's default Undefined).
std::string ToStr(const Value& value);
/// Python's repr(value), used inside str() of lists and dicts.
std::string Repr(const Value& value);
/// Python's repr(float): shortest round trip, "1.0", "1e+16", "inf".
std::string FloatRepr(double value);
/// Python's ==.
bool Equal(const Value& a, const Value& b);
/// Python's <, <=, >, >= (op is "<", "<=", ">", ">="); fails like Python on
/// unorderable types.
bool Compare(const Value& a, const Value& b, std::string_view op);
/// Python's `needle in haystack`.
bool Contains(const Value& haystack, const Value& needle);
/// Python's iter(value) turned into a vector: a string gives its characters,
/// a dict its keys, undefined nothing.
std::vector<Value> Iterate(const Value& value);
/// Python's len(value).
int64_t Length(const Value& value);
/// Throws jinja2's UndefinedError when value is undefined.
void FailIfUndefined(const Value& value);

}  // namespace kvserve::chat_template
