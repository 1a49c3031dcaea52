// Shared by the filter files: the filter table's type and attribute lookup.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "engine/text/chat_template/arguments.h"
#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

using FilterFn = std::function<Value(Interpreter&, const Value&, CallArgs&)>;
using FilterMap = std::map<std::string_view, FilterFn>;

/// Adds the filters over sequences and mappings (sequence_filters.cc).
void AddSequenceFilters(FilterMap& filters);

/// Follows a dotted attribute path ("function.name") the way jinja2's
/// make_attrgetter does: item lookup first, integers for numeric parts.
Value GetPath(Interpreter& interp, Value value, const std::string& path);
/// An `attribute=` argument: a string, or an integer index.
std::string AttributeArg(const BoundArgs& args, size_t i);

}  // namespace kvserve::chat_template
