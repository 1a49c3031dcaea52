// Structured-output fields of the OpenAI API, and the extensions vLLM's
// users send, mapped onto the gRPC API's SamplingParams.constraint oneof
// (so both APIs share one compiler and one set of errors):
//
//   response_format: {"type": "text" | "json_object"}
//                    {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}
//   guided_json (schema object or JSON text), guided_regex, guided_choice,
//   guided_grammar (GBNF)
//   structured_outputs: {"json" | "regex" | "choice" | "grammar" | "json_object"}
//
// At most one of them may constrain a request.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "kvserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace kvserve::http {

/// `get(name)` returns the body's field (null when absent or JSON null) and
/// marks it known. INVALID_ARGUMENT messages start with the field's path.
/// `field` receives the path of the field that set the constraint
/// ("guided_json", "response_format", "structured_outputs.regex"), for the
/// compiler's errors; it is left alone when none did.
absl::Status ParseOpenAiConstraint(
    const std::function<const nlohmann::ordered_json*(const std::string&)>& get,
    v1::SamplingParams& sampling, std::string* field);

}  // namespace kvserve::http
