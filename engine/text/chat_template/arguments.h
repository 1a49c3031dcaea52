// Binds a call's positional and keyword arguments to named parameters, like a
// Python call does, for the built-in filters, tests, methods and functions.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

class BoundArgs {
 public:
  /// Fails naming `function` on an unknown keyword, a parameter given twice,
  /// or more positional arguments than parameters.
  BoundArgs(std::string_view function, const CallArgs& args,
            std::initializer_list<std::string_view> params);

  bool Has(size_t i) const { return values_[i].has_value(); }
  const Value& Get(size_t i) const;  // undefined when absent
  Value GetOr(size_t i, Value fallback) const { return Has(i) ? *values_[i] : fallback; }
  /// The argument as a string, an integer or a bool; fails naming the
  /// parameter when it has another type.
  std::string String(size_t i, std::string fallback) const;
  int64_t Int(size_t i, int64_t fallback) const;
  bool Bool(size_t i, bool fallback) const;
  /// An optional string: absent or None gives nullopt.
  std::optional<std::string> OptionalString(size_t i) const;

 private:
  std::string function_;
  std::vector<std::string> names_;
  std::vector<std::optional<Value>> values_;
};

}  // namespace kvserve::chat_template
