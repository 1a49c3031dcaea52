#include "engine/text/chat_template/arguments.h"

#include "absl/strings/str_cat.h"

namespace kvserve::chat_template {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : function_(function), names_(params.begin(), params.end()), values_(params.size()) {
  if (args.positional.size() > params.size()) {
    Fail(absl::StrCat(std::string(function), "() takes at most ", params.size(), " argument(s), ",
                      args.positional.size(), " given"));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) Fail(absl::StrCat(function_, "() got an unexpected keyword argument '", key, "'"));
    if (values_[i]) Fail(absl::StrCat(function_, "() got multiple values for argument '", key, "'"));
    values_[i] = value;
  }
}

const Value& BoundArgs::Get(size_t i) const {
  static const Value* const kUndefined = new Value();
  return values_[i] ? *values_[i] : *kUndefined;
}

std::string BoundArgs::String(size_t i, std::string fallback) const {
  if (!Has(i)) return fallback;
  const Value& v = *values_[i];
  if (!v.is_string()) {
    Fail(absl::StrCat(function_, "(): argument '", names_[i], "' must be a string, not ", v.TypeName()));
  }
  return v.as_string();
}

int64_t BoundArgs::Int(size_t i, int64_t fallback) const {
  if (!Has(i)) return fallback;
  const Value& v = *values_[i];
  if (!v.is_int() && !v.is_bool()) {
    Fail(absl::StrCat(function_, "(): argument '", names_[i], "' must be an integer, not ",
                      v.TypeName()));
  }
  return v.as_integral();
}

bool BoundArgs::Bool(size_t i, bool fallback) const { return Has(i) ? Truthy(*values_[i]) : fallback; }

std::optional<std::string> BoundArgs::OptionalString(size_t i) const {
  if (!Has(i) || values_[i]->is_none()) return std::nullopt;
  return String(i, "");
}

}  // namespace kvserve::chat_template
