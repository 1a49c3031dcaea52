// The converter's built-in rules: JSON's own lexical grammar (value, object,
// array, string, number, ...) and the string formats, each added to a
// grammar on first use together with the rules it needs.
#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/json_schema_converter.h"

namespace kvserve::grammar {
namespace {

struct BuiltinRule {
  std::string_view name;
  std::string_view body;
  std::vector<std::string_view> needs;
};

const std::vector<BuiltinRule>& Builtins() {
  static const std::vector<BuiltinRule> kRules = {
      // At most one space, or one newline and some indentation, between
      // tokens: a model cannot loop on whitespace.
      {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
      {"value",
       "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object",
       R"("{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}")",
       {"ws", "string", "value"}},
      {"array", R"("[" ws ( value ( ws "," ws value )* ws )? "]")", {"ws", "value"}},
      {"string", R"("\"" char* "\"")", {"char"}},
      // \u escapes of surrogates are left out: a pair would count as two
      // characters here and as one in minLength / maxLength.
      {"char",
       R"(plain-char | "\\" ( [\"\\/bfnrt] | "u" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))",
       {"plain-char"}},
      {"plain-char", "", {}},  // filled in by Builtin(): a class of every unescaped character
      {"number",
       R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [+\-]? [0-9]{1,3} )?)",
       {}},
      {"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))", {}},
      {"boolean", R"("true" | "false")", {}},
      {"null", R"("null")", {}},
      {"date",
       R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))",
       {}},
      {"time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( [zZ] | [+\-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}},
      {"date-time", R"(date [tT] time)", {"date", "time"}},
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})",
       {}},
      {"email",
       R"([a-zA-Z0-9_.+\-]+ "@" [a-zA-Z0-9] [a-zA-Z0-9\-]{0,62} ( "." [a-zA-Z0-9] [a-zA-Z0-9\-]{0,62} )+)",
       {}},
      {"ipv4", R"(dec-octet "." dec-octet "." dec-octet "." dec-octet)", {"dec-octet"}},
      {"dec-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])", {}},
  };
  return kRules;
}

}  // namespace

bool IsBuiltinRuleName(std::string_view name) {
  for (const BuiltinRule& rule : Builtins()) {
    if (rule.name == name) return true;
  }
  return name == "root";
}

std::string SchemaConverter::Builtin(std::string_view name) {
  const std::string key(name);
  if (rules_.count(key)) return key;
  for (const BuiltinRule& rule : Builtins()) {
    if (rule.name != name) continue;
    std::string body(rule.body);
    if (name == "plain-char") {
      body = GbnfClass(Complement({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
    }
    rules_[key] = body;
    order_.push_back(key);
    for (std::string_view need : rule.needs) Builtin(need);
  }
  return key;
}

}  // namespace kvserve::grammar
