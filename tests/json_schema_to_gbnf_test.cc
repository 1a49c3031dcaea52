// JSON Schema to GBNF (engine/grammar/json_schema_to_gbnf.h): for each
// schema, the real matcher accepts the valid instances and rejects the
// invalid ones; unsupported or malformed schemas are refused naming the
// JSON pointer. tests/grammar_schema_test.py compares against Python's
// jsonschema on random values.
#include "engine/grammar/json_schema_to_gbnf.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/grammar/gbnf.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve::grammar {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string name;
  std::string schema;
  std::vector<std::string> valid, invalid;
};

std::vector<Case> Cases() {
  return {
      {"any value",
       "{}",
       {"1", "-2.5e3", "\"x\"", "true", "null", "[1, {\"a\": []}]", "{\"k\": \"v\"}"},
       {"", "tru", "[1,]", "{\"a\" 1}", "01", "\"\\x\""}},
      {"true is any value", "true", {"[]", "{}"}, {"nul"}},
      {"any object (json_object)",
       R"({"type": "object"})",
       {"{}", "{ }", "{\"a\": 1, \"b\": [true, null]}", "{\n  \"a\": {\"b\": {}}\n}"},
       {"[]", "1", "{\"a\"}", "{,}", "{\"a\": 1,}", "{  }", "{\"a\":  1}"}},
      {"strings",
       R"({"type": "string"})",
       {"\"\"", "\"h\\u00e9llo \\\"q\\\" \\\\ \\n\"", "\"\xC3\xA9\xF0\x9F\x98\x80\""},
       {"\"a", "\"\n\"", "\"\\ud800\"", "\"\\q\"", "'a'"}},
      {"string lengths",
       R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {"\"ab\"", "\"abc\"", "\"\\n\\t\"", "\"\xC3\xA9\xC3\xA9\""},
       {"\"a\"", "\"abcd\"", "\"\""}},
      {"pattern",
       R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})",
       {"\"AB-123\""},
       {"\"ab-123\"", "\"AB-1234\"", "\"AB123\""}},
      {"pattern with JSON escapes",
       R"({"type": "string", "pattern": "a\"b\\\\c\\n.+"})",
       {"\"a\\\"b\\\\c\\nxy\"", "\"a\\\"b\\\\c\\n\\\"\""},
       {"\"a\"b\\\\c\\nx\"", "\"a\\\"b\\\\c\\n\\n\""}},
      {"formats",
       R"({"type": "object", "properties": {
            "d": {"type": "string", "format": "date"},
            "t": {"type": "string", "format": "time"},
            "dt": {"type": "string", "format": "date-time"},
            "u": {"type": "string", "format": "uuid"},
            "e": {"type": "string", "format": "email"},
            "ip": {"type": "string", "format": "ipv4"}},
          "required": ["d", "t", "dt", "u", "e", "ip"]})",
       {R"({"d": "2024-02-29", "t": "23:59:59Z", "dt": "2024-05-01T12:30:00.123+02:00",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "ada.l+x@example.co.uk",
            "ip": "192.168.0.255"})"},
       {R"({"d": "2024-13-01", "t": "23:59:59Z", "dt": "2024-05-01T12:30:00Z",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "a@b.c", "ip": "1.2.3.4"})",
        R"({"d": "2024-01-01", "t": "24:00:00Z", "dt": "2024-05-01T12:30:00Z",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "a@b.c", "ip": "1.2.3.4"})",
        R"({"d": "2024-01-01", "t": "12:00:00Z", "dt": "2024-05-01 12:30:00Z",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "a@b.c", "ip": "1.2.3.4"})",
        R"({"d": "2024-01-01", "t": "12:00:00Z", "dt": "2024-05-01T12:30:00Z",
            "u": "123e4567e89b12d3a456426614174000", "e": "a@b.c", "ip": "1.2.3.4"})",
        R"({"d": "2024-01-01", "t": "12:00:00Z", "dt": "2024-05-01T12:30:00Z",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "ab.c", "ip": "1.2.3.4"})",
        R"({"d": "2024-01-01", "t": "12:00:00Z", "dt": "2024-05-01T12:30:00Z",
            "u": "123e4567-e89b-12d3-a456-426614174000", "e": "a@b.c", "ip": "256.1.1.1"})"}},
      {"integers",
       R"({"type": "integer"})",
       {"0", "-7", "123456"},
       {"1.5", "01", "-", "1e3", "+1"}},
      {"integer bounds",
       R"({"type": "integer", "minimum": -15, "maximum": 120})",
       {"-15", "-9", "0", "7", "99", "120"},
       {"-16", "121", "200", "-100", "1000"}},
      {"exclusive integer bounds",
       R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})",
       {"1", "9"},
       {"0", "10", "-1"}},
      {"minimum 0: no minus",
       R"({"type": "integer", "minimum": 0})",
       {"0", "12345678"},
       {"-1", "-0"}},
      {"numbers",
       R"({"type": "number"})",
       {"0", "-1.25", "3e8", "1.5E-3"},
       {".5", "1.", "-", "NaN"}},
      {"number bounds",
       R"({"type": "number", "minimum": -1, "exclusiveMaximum": 2})",
       {"-1", "-0.5", "0", "1.999", "-1.0"},
       {"-1.01", "2", "2.0", "2.5", "-2"}},
      {"positive number",
       R"({"type": "number", "exclusiveMinimum": 0})",
       {"0.001", "5", "12.5"},
       {"0", "0.000", "-1"}},
      {"booleans and null",
       R"({"type": ["boolean", "null"]})",
       {"true", "false", "null"},
       {"0", "\"true\""}},
      {"enum",
       R"({"enum": ["red", "green", 3, null, {"a": [1]}]})",
       {"\"red\"", "\"green\"", "3", "null", "{\"a\":[1]}"},
       {"\"blue\"", "4", "\"Red\""}},
      {"enum filtered by type", R"({"type": "string", "enum": ["a", 1]})", {"\"a\""}, {"1"}},
      {"const", R"({"const": "fixed \"value\""})", {"\"fixed \\\"value\\\"\""}, {"\"fixed\""}},
      {"nested objects with required and optional properties",
       R"({"type": "object",
           "properties": {
             "name": {"type": "string"},
             "age": {"type": "integer", "minimum": 0},
             "address": {"type": "object",
                         "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                         "required": ["street"]}},
           "required": ["name"]})",
       {R"({"name": "Ada"})", R"({"name": "Ada", "age": 36})",
        R"({"name": "Ada", "address": {"street": "Main"}})",
        R"({"name":"Ada","age":36,"address":{"street":"Main","zip":"1"}})"},
       {R"({"age": 36})", R"({"name": "Ada", "age": -1})", R"({"name": "Ada", "extra": 1})",
        R"({"name": "Ada", "address": {"zip": "1"}})", R"({"age": 36, "name": "Ada"})"}},
      {"all optional properties",
       R"({"type": "object", "properties": {"a": {"type": "integer"},
           "b": {"type": "integer"}, "c": {"type": "integer"}}})",
       {"{}", "{\"a\": 1}", "{\"b\": 2}", "{\"c\": 3}", "{\"a\": 1, \"c\": 3}",
        "{\"a\": 1, \"b\": 2, \"c\": 3}"},
       {"{\"d\": 1}", "{\"a\": 1,}", "{, \"a\": 1}", "{\"b\": 1, \"a\": 2}"}},
      {"additionalProperties schema",
       R"({"type": "object", "properties": {"id": {"type": "integer"}},
           "required": ["id"], "additionalProperties": {"type": "string"}})",
       {"{\"id\": 1}", "{\"id\": 1, \"x\": \"y\", \"idx\": \"z\", \"i\": \"w\"}"},
       {"{\"id\": 1, \"x\": 2}", "{\"id\": 1, \"id\": \"dup\"}", "{\"x\": \"y\"}"}},
      {"map of numbers",
       R"({"type": "object", "additionalProperties": {"type": "number"}})",
       {"{}", "{\"a\": 1, \"b\": 2.5}"},
       {"{\"a\": \"x\"}"}},
      {"arrays",
       R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
       {"[1]", "[1, 2, 3]", "[ 1,2 ]"},
       {"[]", "[1, 2, 3, 4]", "[\"a\"]", "[1,]"}},
      {"empty array allowed",
       R"({"type": "array", "items": {"type": "string"}})",
       {"[]", "[\"a\", \"b\"]"},
       {"[1]"}},
      {"tuples",
       R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
           "items": false})",
       {"[]", "[\"a\"]", "[\"a\", 1]"},
       {"[1]", "[\"a\", 1, 2]", "[\"a\", \"b\"]"}},
      {"tuples then items",
       R"({"type": "array", "prefixItems": [{"const": "op"}],
           "items": {"type": "number"}, "minItems": 2})",
       {"[\"op\", 1]", "[\"op\", 1, 2.5]"},
       {"[\"op\"]", "[1, 2]", "[\"op\", \"x\"]"}},
      {"anyOf",
       R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]})",
       {"\"ab\"", "10", "99999"},
       {"\"abc\"", "9", "null"}},
      {"oneOf as anyOf, with pydantic's Optional",
       R"({"oneOf": [{"type": "boolean"}, {"type": "null"}], "default": null, "title": "Flag"})",
       {"true", "null"},
       {"0"}},
      {"allOf of one",
       R"({"allOf": [{"type": "string", "enum": ["x"]}], "description": "d"})",
       {"\"x\""},
       {"\"y\""}},
      {"$ref to $defs",
       R"({"$defs": {"point": {"type": "object",
             "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
             "required": ["x", "y"]}},
           "type": "object", "properties": {"from": {"$ref": "#/$defs/point"},
             "to": {"$ref": "#/$defs/point"}}, "required": ["from", "to"]})",
       {R"({"from": {"x": 0, "y": 1}, "to": {"x": 2.5, "y": -3}})"},
       {R"({"from": {"x": 0}, "to": {"x": 2.5, "y": -3}})"}},
      {"recursive $ref (a tree)",
       R"({"definitions": {"node": {"type": "object",
             "properties": {"value": {"type": "integer"},
               "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}},
             "required": ["value"]}},
           "$ref": "#/definitions/node"})",
       {R"({"value": 1})",
        R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]})"},
       {R"({"value": 1, "children": [{"children": []}]})", R"({"value": "1"})"}},
      {"recursion through the root",
       R"({"type": "object", "properties": {
           "name": {"type": "string"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
           "required": ["name", "next"]})",
       {R"({"name": "a", "next": null})", R"({"name": "a", "next": {"name": "b", "next": null}})"},
       {R"({"name": "a", "next": {"name": "b"}})"}},
      {"required without properties",
       R"({"type": "object", "required": ["a"]})",
       {R"({"a": 1})", R"({"a": 1, "b": 2})"},
       {"{}", R"({"b": 2})"}},
      {"type inferred from keywords",
       R"({"properties": {"a": {"maxLength": 1}}, "required": ["a"]})",
       {R"({"a": "x"})"},
       {R"({"a": 1})", "1"}},
      {"type list with keywords per type",
       R"({"type": ["string", "integer"], "minLength": 2, "minimum": 5})",
       {"\"ab\"", "5"},
       {"\"a\"", "4"}},
      {"property names needing escapes",
       R"({"type": "object", "properties": {"a\"b/c~d\u00e9": {"type": "null"}},
           "required": ["a\"b/c~d\u00e9"]})",
       {"{\"a\\\"b/c~d\xC3\xA9\": null}"},
       {"{\"ab/c~d\": null}"}},
      {"bounded whitespace",
       R"({"type": "array", "items": {"type": "integer"}})",
       {"[1,2]", "[ 1 , 2 ]", "[\n  1,\n  2\n]"},
       {"[  1]", "[1 ,  2]", "[\n\n1]"}},
  };
}

TEST(JsonSchemaToGbnfTest, ValidInstancesMatchAndInvalidOnesDoNot) {
  for (const Case& c : Cases()) {
    absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(c.schema);
    ASSERT_TRUE(gbnf.ok()) << c.name << ": " << gbnf.status();
    for (const std::string& s : c.valid) {
      absl::StatusOr<bool> m = GbnfMatches(*gbnf, s);
      ASSERT_TRUE(m.ok()) << c.name << ": " << m.status() << "\n" << *gbnf;
      EXPECT_TRUE(*m) << c.name << ": should accept " << s << "\n" << *gbnf;
    }
    for (const std::string& s : c.invalid) {
      absl::StatusOr<bool> m = GbnfMatches(*gbnf, s);
      ASSERT_TRUE(m.ok()) << c.name << ": " << m.status();
      EXPECT_FALSE(*m) << c.name << ": should reject " << s << "\n" << *gbnf;
    }
  }
}

TEST(JsonSchemaToGbnfTest, PropertiesKeepTheSchemaOrderAndRootRuleComesFirst) {
  absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(
      R"({"type": "object", "properties": {"z": {"type": "null"}, "a": {"type": "null"}},
          "required": ["a", "z"]})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status();
  EXPECT_EQ(gbnf->rfind("root ::= ", 0), 0u) << *gbnf;
  EXPECT_TRUE(*GbnfMatches(*gbnf, R"({"z": null, "a": null})"));
  EXPECT_FALSE(*GbnfMatches(*gbnf, R"({"a": null, "z": null})"));
}

TEST(JsonSchemaToGbnfTest, ManyOptionalPropertiesStayLinear) {
  std::string schema = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 300; ++i) absl::StrAppend(&schema, i ? ", " : "", "\"p", i, "\": {}");
  schema += "}}";
  absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(schema);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status();
  EXPECT_LT(gbnf->size(), 100000u);
  EXPECT_TRUE(*GbnfMatches(*gbnf, R"({"p7": 1, "p299": [2]})"));
  EXPECT_FALSE(*GbnfMatches(*gbnf, R"({"p299": 1, "p7": 2})"));
}

TEST(JsonSchemaToGbnfTest, RefusesWithTheJsonPointer) {
  struct Bad {
    std::string schema;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"{", "json_schema: not valid JSON:"},
      {"[]", "json_schema: at /: a schema must be an object or a boolean"},
      {"false", "json_schema: at /: schema false accepts no value"},
      {R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": "3"}}})",
       "json_schema: at /properties/age/minimum: minimum must be a number"},
      {R"({"properties": {"a": {"multipleOf": 2}}})",
       "json_schema: at /properties/a/multipleOf: unsupported keyword 'multipleOf'"},
      {R"({"type": "array", "uniqueItems": true})",
       "json_schema: at /uniqueItems: unsupported keyword 'uniqueItems'"},
      {R"({"not": {}})", "json_schema: at /not: unsupported keyword 'not'"},
      {R"({"type": "strin"})", "json_schema: at /type: unknown type \"strin\""},
      {R"({"type": "string", "format": "uri"})",
       "json_schema: at /format: unsupported format \"uri\" (supported: date, time, date-time, "
       "uuid, "
       "email, ipv4)"},
      {R"({"type": "string", "pattern": "(a)\\1"})",
       "json_schema: at /pattern: regex: at offset 3: back-references are not supported"},
      {R"({"type": "string", "pattern": "a+", "maxLength": 3})",
       "json_schema: at /: pattern with minLength or maxLength is not supported"},
      {R"({"type": "string", "minLength": 5, "maxLength": 2})",
       "json_schema: at /: minLength 5 is above maxLength 2"},
      {R"({"type": "string", "maxLength": -1})",
       "json_schema: at /maxLength: maxLength must be a non-negative integer"},
      {R"({"type": "array", "maxItems": 1000000})",
       "json_schema: at /maxItems: maxItems 1000000 is above the supported 10000"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})",
       "json_schema: at /: no array has at least 3 and at most 2 items"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})",
       "json_schema: at /: no integer lies between minimum and maximum"},
      {R"({"type": "number", "minimum": 0.5})",
       "json_schema: at /: a fractional minimum on a number is not supported"},
      {R"({"type": "integer", "maximum": 1e300})",
       "json_schema: at /: bounds beyond ±10^18 are not supported"},
      {R"({"$ref": "#/$defs/missing"})",
       "json_schema: at /$ref: \"#/$defs/missing\" does not resolve"},
      {R"({"$ref": "https://example.com/s.json"})", "json_schema: at /$ref: only local references"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
          "$ref": "#/$defs/a"})",
       "json_schema: at /$defs/b/anyOf/0/$ref: \"#/$defs/a\" refers back to itself"},
      {R"({"$ref": "#/$defs/a", "type": "string", "$defs": {"a": {}}})",
       "json_schema: at /: 'type' beside '$ref' is not supported"},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})",
       "json_schema: at /allOf: allOf is supported with exactly one schema"},
      {R"({"anyOf": []})", "json_schema: at /anyOf: must be a non-empty array of schemas"},
      {R"({"enum": []})", "json_schema: at /enum: enum must be a non-empty array"},
      {R"({"type": "string", "enum": [1, 2]})",
       "json_schema: at /enum: no value has the schema's type"},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})",
       "json_schema: at /properties/a: a required property has schema false"},
      {R"({"required": [1]})", "json_schema: at /required/0: required must list strings"},
      {R"({"type": "object", "additionalProperties": 3})",
       "json_schema: at /additionalProperties: additionalProperties must be a boolean or a schema"},
  };
  for (const Bad& b : bad) {
    absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(b.schema);
    ASSERT_FALSE(gbnf.ok()) << b.schema << " -> " << *gbnf;
    EXPECT_EQ(gbnf.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(gbnf.status().message()), HasSubstr(b.message)) << b.schema;
  }
}

TEST(JsonSchemaToGbnfTest, DepthIsBounded) {
  std::string schema;
  for (int i = 0; i < 100; ++i) schema += R"({"type": "array", "items": )";
  schema += "{}";
  for (int i = 0; i < 100; ++i) schema += "}";
  absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(schema);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_THAT(std::string(gbnf.status().message()),
              HasSubstr("schema nests deeper than 64 levels"));

  const std::string deep_json = std::string(2000, '[') + std::string(2000, ']');
  gbnf = JsonSchemaToGbnf(R"({"const": )" + deep_json + "}");
  ASSERT_FALSE(gbnf.ok());
  EXPECT_THAT(std::string(gbnf.status().message()), HasSubstr("JSON nests deeper than 512 levels"));
}

}  // namespace
}  // namespace kvserve::grammar
