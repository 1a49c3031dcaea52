// The global functions a chat template sees: jinja2's range, dict, namespace
// (plus lipsum-free subset) and transformers' raise_exception, strftime_now.
#pragma once

#include <optional>
#include <string_view>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

std::optional<Value> LookupGlobal(std::string_view name);

}  // namespace kvserve::chat_template
