// JSON Schema to GBNF (gbnf.h): the JSON values a schema accepts, as a
// grammar over their compact-or-spaced text (whitespace between tokens is
// allowed but bounded, so a model cannot loop on it).
//
// Supported (what vLLM's and xgrammar's users send): type (one or a list),
// properties / required / additionalProperties (false, true or a schema),
// enum, const, items / prefixItems / minItems / maxItems, anyOf / oneOf
// (oneOf as anyOf), allOf of one schema, $ref to #/$defs/... or
// #/definitions/... (recursive references included), string minLength /
// maxLength / pattern / format (date, time, date-time, uuid, email, ipv4),
// integer and number (minimum / maximum where they bound the digits). A
// keyword that cannot be enforced is refused, not ignored. With `properties`
// and no additionalProperties, no other members are allowed (xgrammar's
// strict mode, vLLM's default; OpenAI's strict mode demands `false` there);
// properties come in schema order.
// The whole subset: docs/structured_outputs.md, "JSON Schema support".
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvserve::grammar {

/// `schema_json` is the schema's JSON text. Errors are INVALID_ARGUMENT
/// naming the JSON pointer and the problem ("json_schema: at
/// /properties/age: minimum must be a number").
absl::StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json);

}  // namespace kvserve::grammar
