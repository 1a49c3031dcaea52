// The Jinja chat-template interpreter, feature by feature. Expected strings are
// what Python jinja2 3.1 renders with transformers' settings
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks); the
// differential test (chat_template_differential_test.py) checks real
// templates against jinja2 itself.
#include <string>
#include <vector>

#include "engine/text/chat_template/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using Json = nlohmann::ordered_json;

// Renders `source` with `context`; a failure comes back as "ERROR: <message>".
std::string Render(const std::string& source, const Json& context = Json::object()) {
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return "ERROR: " + std::string(tmpl.status().message());
  absl::StatusOr<std::string> out = tmpl->Render(context);
  if (!out.ok()) return "ERROR: " + std::string(out.status().message());
  return *out;
}

bool IsError(const std::string& rendered) { return rendered.rfind("ERROR: ", 0) == 0; }

// A table row: template, context (JSON), and what jinja2 3.1 renders, or
// kError where jinja2 fails (the comment after the row gives its error). The
// rows were produced by running each template through jinja2 with
// transformers' settings.
constexpr const char* kError = nullptr;
struct Case {
  const char* source;
  const char* context;
  const char* expected;
};

void ExpectRenders(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(c.source);
    absl::StatusOr<std::string> out =
        tmpl.ok() ? tmpl->Render(Json::parse(c.context)) : absl::StatusOr<std::string>(tmpl.status());
    if (c.expected == kError) {
      EXPECT_FALSE(out.ok()) << "rendered: " << *out;
      if (!out.ok()) {
        EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
      }
    } else {
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(*out, c.expected);
    }
  }
}

TEST(ChatTemplateTest, TextAndPrint) {
  EXPECT_EQ(Render("Hello {{ name }}!", {{"name", "world"}}), "Hello world!");
  EXPECT_EQ(Render("{{ 1 + 2 }} {{ 'a' ~ 1 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }}"), "3 a1 3 2 1024");
  EXPECT_EQ(Render("{{ 1.0 }} {{ 1 / 2 }} {{ 1e16 }} {{ 0.1 + 0.2 }}"),
            "1.0 0.5 1e+16 0.30000000000000004");
  EXPECT_EQ(Render("{{ none }} {{ true }} {{ [1, 'a', none] }} {{ {'k': (1, 2)} }}"),
            "None True [1, 'a', None] {'k': (1, 2)}");
}

TEST(ChatTemplateTest, ForIfSet) {
  Json ctx = {{"xs", {1, 2, 3}}};
  EXPECT_EQ(Render("{% for x in xs %}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", ctx), "1,2,3");
  EXPECT_EQ(Render("{% set y = xs | length %}{% if y > 2 %}big{% elif y > 1 %}mid{% else %}small{% endif %}", ctx),
            "big");
}

TEST(ChatTemplateTest, SyntaxErrorNamesLine) {
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse("a\n{% for x in %}");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tmpl.status().message().find("line 2"), std::string_view::npos) << tmpl.status().message();
}

TEST(ChatTemplateTest, RaiseException) {
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse("{{ raise_exception('roles must alternate') }}");
  ASSERT_TRUE(tmpl.ok());
  absl::StatusOr<std::string> out = tmpl->Render(Json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "roles must alternate");
  EXPECT_TRUE(IsTemplateException(out.status()));
  EXPECT_FALSE(IsTemplateException(absl::InvalidArgumentError("x")));
  EXPECT_TRUE(IsError(Render("{{ 1 + 'a' }}")));
}

// Found by the chat_template fuzzer: numbers out of range once escaped as
// std::out_of_range from std::stoll / std::stod / std::stoul and aborted
// the process. Expected values are jinja2 3.1's.
TEST(ChatTemplateTest, NumbersOutOfRangeNeverThrow) {
  EXPECT_EQ(Render("{{ 1e400 }}|{{ 1e-400 }}|{{ -1e400 }}"), "inf|0.0|-inf");
  EXPECT_EQ(Render("{{ xs.99999999999999999999 }}", {{"xs", {1}}}), "");
  EXPECT_EQ(Render("{{ xs.0 }}", {{"xs", {7}}}), "7");
  EXPECT_EQ(Render("{{ xs | map(attribute='99999999999999999999') | list | length }}",
                   {{"xs", Json::array({Json::array({1})})}}),
            "1");
  EXPECT_TRUE(IsError(Render("{{ '{99999999999999999999}'.format(1) }}")));
  EXPECT_TRUE(IsError(Render("{{ '%.99999999999f' % 1.0 }}")));
  EXPECT_EQ(Render("{{ '%.150f' % 1.0 }}"), "1." + std::string(150, '0'));
  EXPECT_TRUE(IsError(Render("{{ 99999999999999999999 }}")));  // jinja2: a big int; kvserve: 64 bits
}

TEST(ChatTemplateTable, Whitespace) {
  ExpectRenders({
      {"  {% if true %}\n  x\n  {% endif %}\nend",
       "{}",
       "  x\nend"},
      {"a\n  {%- if true -%}  \n b \n {%- endif -%}  \nc",
       "{}",
       "abc"},
      {"a  {%+ if true %}b{% endif +%}\nc",
       "{}",
       "a  b\nc"},
      {"{# comment #}\nline\n  {# indented comment #}\nnext",
       "{}",
       "line\nnext"},
      {"  {{ 'x' }}  \n  y",
       "{}",
       "  x  \n  y"},
      {"{% raw %}{{ not evaluated }} {% if %}{% endraw %}!",
       "{}",
       "{{ not evaluated }} {% if %}!"},
      {"a\n",
       "{}",
       "a"},
      {"a\n\n",
       "{}",
       "a\n"},
      {"{% for x in [1, 2] %}\n{{ x }}\n{% endfor %}\ndone",
       "{}",
       "1\n2\ndone"},
      {"line1\r\nline2\r\n{% if true %}\r\nx\r\n{% endif %}\r\n",
       "{}",
       "line1\nline2\nx\n"},
      {"{{- ' a ' -}}   {{ 'b' }}  {{- 'c' }}",
       "{}",
       " a bc"},
      {"<{%- set x = 1 -%}\n\n  >{{ x }}",
       "{}",
       "<>1"},
      {"    {% for m in xs %}\n    - {{ m }}\n    {% endfor %}\n",
       "{\"xs\": [\"a\", \"b\"]}",
       "    - a\n    - b\n"},
  });
}

TEST(ChatTemplateTable, Undefined) {
  ExpectRenders({
      {"[{{ missing }}]{{ missing is defined }} {{ missing is undefined }} {{ missing | default('d') }} {{ missing | length }} {{ missing ~ 'a' }} {{ missing == missing }} {{ 'a' in missing }}",
       "{}",
       "[]False True d 0 a True False"},
      {"{% for x in missing %}x{% else %}empty{% endfor %} {{ missing | list }} {{ missing | join(',') }}|{{ missing | trim }}|{{ missing | upper }}|",
       "{}",
       "empty [] |||"},
      {"{{ missing.attr }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'missing' is undefined
      {"{{ missing['key'] }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'missing' is undefined
      {"{{ missing + 1 }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'missing' is undefined
      {"{{ missing() }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'missing' is undefined
      {"{{ missing | tojson }}",
       "{}",
       kError},  // jinja2: TypeError: Object of type Undefined is not JSON serializable
      {"{{ d.missing is defined }} {{ d['missing'] is defined }} {{ d.x.y is defined }}",
       "{\"d\": {\"x\": {}}}",
       "False False False"},
      {"{{ d.missing.deeper }}",
       "{\"d\": {}}",
       kError},  // jinja2: UndefinedError: 'dict object' has no attribute 'missing'
      {"{{ xs[5] is defined }} {{ xs[-1] }} {{ 'abc'[10] is defined }}",
       "{\"xs\": [1, 2]}",
       "False 2 False"},
      {"{{ none }} {{ none is none }} {{ x is none }} {{ x is defined }}",
       "{\"x\": null}",
       "None True True True"},
      {"{{ (none if false) is defined }} [{{ 'a' if false }}]",
       "{}",
       "False []"},
  });
}

TEST(ChatTemplateTable, Truthiness) {
  ExpectRenders({
      {"{% if [] %}a{% elif {} %}b{% elif '' %}c{% elif 0.0 %}d{% elif none %}e{% else %}f{% endif %}",
       "{}",
       "f"},
      {"{{ [0] and 'y' or 'n' }} {{ '' or 'fallback' }} {{ 0 or none }} {{ 1 and 2 }} {{ not [] }} {{ not 'x' }}",
       "{}",
       "y fallback None 2 True False"},
      {"{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 'a' != 'b' }}",
       "{}",
       "True False True True True True True"},
      {"{{ 1 < 'a' }}",
       "{}",
       kError},  // jinja2: TypeError: '<' not supported between instances of 'int' and 'str'
      {"{{ 'ab' in 'cabd' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1, 2] }} {{ 'x' not in 'abc' }}",
       "{}",
       "True True True True True"},
  });
}

TEST(ChatTemplateTable, Loop) {
  ExpectRenders({
      {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}",
       "{\"xs\": [\"a\", \"b\", \"c\"]}",
       "1032TrueFalse3 2121FalseFalse3 3210FalseTrue3 "},
      {"{% for x in xs %}{{ loop.previtem | default('-') }}{{ x }}{{ loop.nextitem | default('-') }}{{ loop.cycle('o', 'e') }} {% endfor %}",
       "{\"xs\": [\"a\", \"b\", \"c\"]}",
       "-abo abce bc-o "},
      {"{% for x in xs if x is odd %}{{ x }}:{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}",
       "{\"xs\": [1, 2, 3, 4, 5]}",
       "1:1/3,3:2/3,5:3/3"},
      {"{% for x in [] %}x{% else %}none{% endfor %}",
       "{}",
       "none"},
      {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
       "{}",
       "0134"},
      {"{% for row in [[1, 2], [3]] %}{% set outer = loop %}{% for c in row %}{{ outer.index }}.{{ loop.index }}={{ c }} {% endfor %}{% endfor %}",
       "{}",
       "1.1=1 1.2=2 2.1=3 "},
      {"{% set x = 'outer' %}{% for i in [1, 2] %}{% set x = i %}{{ x }}{% endfor %}{{ x }}",
       "{}",
       "12outer"},
      {"{% set ns = namespace(total=0, seen=[]) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% set ns.seen = ns.seen + [i] %}{% endfor %}{{ ns.total }} {{ ns.seen }}",
       "{}",
       "6 [1, 2, 3]"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor %} {% for c in 'héllo' %}{{ c }}.{% endfor %}",
       "{\"d\": {\"b\": 1, \"a\": 2}}",
       "b=1;a=2; ba h.é.l.l.o."},
      {"{% for a, b in [[1, 2, 3]] %}{% endfor %}",
       "{}",
       kError},  // jinja2: ValueError: too many values to unpack (expected 2)
      {"{% for i in [1, 2] %}{% if i == 2 %}{{ y }}{% endif %}{% set y = i %}{% endfor %}|",
       "{}",
       "|"},
  });
}

TEST(ChatTemplateTable, Scoping) {
  ExpectRenders({
      {"{{ n }}{% set n = 5 %}{{ n }}",
       "{\"n\": 2, \"c\": false}",
       "25"},
      {"{% if true %}{{ n }}{% endif %}{% set n = 5 %}{{ n }}",
       "{\"n\": 2, \"c\": false}",
       "25"},
      {"{% for i in [1] %}{{ n }}{% set n = 5 %}{{ n }}{% endfor %}|{{ n }}",
       "{\"n\": 2, \"c\": false}",
       "25|2"},
      {"{% for i in [1] %}[{{ n }}]{% endfor %}{% set n = 5 %}{{ n }}",
       "{\"n\": 2, \"c\": false}",
       "[]5"},
      {"{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}",
       "{\"n\": 2, \"c\": false}",
       "01020"},
      {"{% for i in [1, 2] %}{% for j in [1] %}[{{ n }}]{% endfor %}{% set n = 7 %}{% endfor %}",
       "{\"n\": 2, \"c\": false}",
       "[][]"},
      {"{% macro m() %}{{ n }}{% set n = 3 %}{{ n }}{% endmacro %}{{ m() }}",
       "{\"n\": 2, \"c\": false}",
       "23"},
      {"{% for i in [1] %}{% if false %}{% set n = 3 %}{% endif %}{{ n }}{% endfor %}",
       "{\"n\": 2, \"c\": false}",
       "2"},
      {"{% macro m() %}[{{ n }}]{% endmacro %}{{ m() }}{% set n = 1 %}{{ m() }}",
       "{\"n\": 2, \"c\": false}",
       "[][1]"},
      {"{% if c %}{% set n = 1 %}{% else %}{% set n = 2 %}{% endif %}{% for i in [1] %}{{ n }}{% endfor %}",
       "{\"n\": 2, \"c\": false}",
       "2"},
  });
}

TEST(ChatTemplateTable, Macro) {
  ExpectRenders({
      {"{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet('Cy', punct='?') }}",
       "{}",
       "Hello, Ann! Hi, Bob! Hello, Cy?"},
      {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
       "{}",
       kError},  // jinja2: TypeError: macro 'm' takes not more than 1 argument(s)
      {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}",
       "{}",
       kError},  // jinja2: TypeError: macro 'm' takes no keyword argument 'b'
      {"{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}",
       "{}",
       "[]"},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}",
       "{}",
       "120"},
      {"{% set prefix = '>' %}{% macro show(x) %}{{ prefix }}{{ x }}{% endmacro %}{{ show('a') }}{{ show(x='b') }}",
       "{}",
       ">a>b"},
      {"{% macro m(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ m('x') }}",
       "{}",
       "x!"},
      {"{% macro loop_forever(n) %}{{ loop_forever(n + 1) }}{% endmacro %}{{ loop_forever(0) }}",
       "{}",
       kError},  // jinja2: RecursionError: maximum recursion depth exceeded
  });
}

TEST(ChatTemplateTable, Numbers) {
  ExpectRenders({
      {"{{ 1.0 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ 10 / 5 }} {{ -0.0 }} {{ 1.5e300 * 1e10 }}",
       "{}",
       "1.0 1e+16 1000000000000000.0 0.0001 1e-05 0.30000000000000004 2.5 2.0 -0.0 inf"},
      {"{{ 10 // 4 }} {{ -10 // 4 }} {{ 10 % -3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2.0 ** 3 }} {{ true + 1 }} {{ -(3) }} {{ +4 }}",
       "{}",
       "2 -3 -2 2 3.0 0.5 1024 0.5 8.0 2 -3 4"},
      {"{{ 1 / 0 }}",
       "{}",
       kError},  // jinja2: ZeroDivisionError: division by zero
      {"{{ 1 // 0 }}",
       "{}",
       kError},  // jinja2: ZeroDivisionError: integer division or modulo by zero
      {"{{ 1 + 'a' }}",
       "{}",
       kError},  // jinja2: TypeError: unsupported operand type(s) for +: 'int' and 'str'
      {"{{ 'ab' * 3 }} {{ [1] * 2 }} {{ 3 * 'x' }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'n=' ~ 5 ~ ' f=' ~ 1.0 ~ none }}",
       "{}",
       "ababab [1, 1] xxx ab [1, 2] n=5 f=1.0None"},
      {"{{ x }} {{ y }} {{ z }} {{ x + y }} {{ x * 2 }}",
       "{\"x\": 3, \"y\": 2.5, \"z\": 1.0}",
       "3 2.5 1.0 5.5 6"},
  });
}

TEST(ChatTemplateTable, Strings) {
  ExpectRenders({
      {"{{ s[0] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ s[-3:] }} {{ s[:0] }}|{{ s[10:] }}|",
       "{\"s\": \"héllo wörld\"}",
       "h d él dlröw olléh hlowrd rld |d|"},
      {"{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}",
       "{}",
       "a b|a|a|a|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a b', 'c']"},
      {"{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Straße'.upper() }} {{ 'ÀÉ'.lower() }} {{ 'a-b'.replace('-', '+') }}",
       "{}",
       "True True Hello World Hello STRASSE àé a+b"},
      {"{{ '{} and {}'.format(1, 'x') }} {{ '{0}{0}{name}'.format('r', name='n') }} {{ '%s is %d' % ('x', 3) }} {{ '%.2f' % 3.14159 }} {{ 'abc'.find('c') }} {{ 'aaa'.count('a') }} {{ ', '.join(['a', 'b']) }}",
       "{}",
       "1 and x rrn x is 3 3.14 2 3 a, b"},
      {"{{ 'line\\nnext\\ttab \\u00e9 \\x41' }}|{{ \"it's\" }}|{{ 'say \"hi\"' }}|{{ 'con' 'cat' }}",
       "{}",
       "line\nnext\ttab é A|it's|say \"hi\"|concat"},
      {"{{ 'abc'.nosuchmethod() }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'str object' has no attribute 'nosuchmethod'
      {"{{ s.isdigit() }} {{ s.isalpha() }} {{ 'ABC'.isupper() }} {{ 'abc'.islower() }} {{ '  '.isspace() }} {{ 'x'.removeprefix('x') }}|{{ 'ab'.removesuffix('b') }}",
       "{\"s\": \"123\"}",
       "True False True True True |a"},
  });
}

TEST(ChatTemplateTable, Filters) {
  ExpectRenders({
      {"{{ d | tojson }} {{ d | tojson(indent=2) }} {{ 'é\"\\n' | tojson }} {{ [] | tojson }} {{ {} | tojson(indent=2) }} {{ d | tojson(sort_keys=true) }} {{ 1.0 | tojson }} {{ none | tojson }}",
       "{\"d\": {\"z\": [1, 2.5, true, null], \"a\": {\"emoji\": \"😀\", \"ctrl\": \"\\u0001\"}}}",
       "{\"z\": [1, 2.5, true, null], \"a\": {\"emoji\": \"😀\", \"ctrl\": \"\\u0001\"}} {\n  \"z\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": {\n    \"emoji\": \"😀\",\n    \"ctrl\": \"\\u0001\"\n  }\n} \"é\\\"\\n\" [] {} {\"a\": {\"ctrl\": \"\\u0001\", \"emoji\": \"😀\"}, \"z\": [1, 2.5, true, null]} 1.0 null"},
      {"{{ xs | length }} {{ xs | count }} {{ 'héllo' | length }} {{ {'a': 1} | length }} {{ xs | list }} {{ 'ab' | list }} {{ xs | join(', ') }} {{ xs | first }} {{ xs | last }} {{ xs | reverse | list }} {{ 'abc' | reverse }}",
       "{\"xs\": [3, 1, 2]}",
       "3 3 5 1 [3, 1, 2] ['a', 'b'] 3, 1, 2 3 2 [2, 1, 3] cba"},
      {"{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('|') }} {{ ms | rejectattr('role', 'eq', 'user') | list | length }} {{ ms | selectattr('name') | list | length }} {{ ms | selectattr('name', 'defined') | map(attribute='name') | first }}",
       "{\"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\", \"name\": \"bot\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
       "a|c 1 1 bot"},
      {"{{ x | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} {{ '' | d('e', boolean=true) }} {{ 0 | default(5) }}",
       "{}",
       "d None d e 0"},
      {"{{ '  x  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hello wORLD-foo(bar' | title }} {{ 'hELLO' | capitalize }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 5 | string ~ 1 }}",
       "{}",
       "x|hi|HELLO WORLD hello Hello World-Foo(Bar Hello bba 51"},
      {"{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }}",
       "{\"d\": {\"b\": 2, \"a\": 3, \"c\": 1}}",
       "b2a3c1 [('a', 3), ('b', 2), ('c', 1)] [('a', 3), ('b', 2), ('c', 1)]"},
      {"{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ms | sort(attribute='n') | map(attribute='n') | list }}",
       "{\"ms\": [{\"n\": 2}, {\"n\": 1}]}",
       "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1] [1, 2]"},
      {"{{ [1, 2, 2, 'a', 'A'] | unique | list }} {{ [1, 2, 3, 4] | select('even') | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ [1, 0, 2] | select | list }} {{ ['a', 'b'] | map('upper') | list }}",
       "{}",
       "[1, 2, 'a'] [2, 4] [2] [1, 2] ['A', 'B']"},
      {"{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 'x' | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(method='ceil') }}",
       "{}",
       "42 4 0 7 3 2.5 0.0 3 2.57 2.0 4.0 3.0"},
      {"{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}",
       "{}",
       "a\n    b\n\n    c|  a\n  b|a\n> \n> b"},
      {"{{ [1, 2, 3] | sum }} {{ [1.5, 2] | sum }} {{ ms | sum(attribute='n') }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [] | max is defined }}",
       "{\"ms\": [{\"n\": 2}, {\"n\": 1}]}",
       "6 3.5 3 1 3 False"},
      {"{{ [1, 2, 3] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }}",
       "{}",
       "[[1, 2], [3]] [[1, 2], [3, 'x']]"},
      {"{{ 'x' | nosuchfilter }}",
       "{}",
       kError},  // jinja2: syntax: No filter named 'nosuchfilter'. (line 1)
      {"{{ xs | selectattr('role', 'equalto', 'user') | length }}",
       "{\"xs\": []}",
       kError},  // jinja2: TypeError: object of type 'generator' has no len()
      {"{% if xs | selectattr('role', 'equalto', 'system') %}truthy{% endif %} {{ xs | selectattr('role', 'equalto', 'system') | list | length }}",
       "{\"xs\": [{\"role\": \"user\"}]}",
       "truthy 0"},
      {"{{ '%s-%s' | format('a', 'b') }} {{ '<a href=\"x\">&</a>' | e }} {{ 'x' | safe }} {{ d | attr('items') is defined }}",
       "{\"d\": {}}",
       "a-b &lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; x True"},
  });
}

TEST(ChatTemplateTable, Tests) {
  ExpectRenders({
      {"{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 'a' is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }}",
       "{}",
       "True True True False True False False True True False True False True"},
      {"{{ {} is mapping }} {{ [] is mapping }} {{ 'a' is string }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ {} is sequence }} {{ [] is sequence }} {{ 'x' is sequence }} {{ 1 is sequence }} {{ none is none }} {{ 0 is none }}",
       "{}",
       "True False True True True False True True True False True False"},
      {"{{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 2 is in [1, 2] }} {{ 'a' is eq 'a' }} {{ 'a' is equalto 'b' }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 3 is gt 2 }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ x is not defined }}",
       "{}",
       "True False True False True True False True True True True True True"},
      {"{{ 1 is nosuchtest }}",
       "{}",
       kError},  // jinja2: syntax: No test named 'nosuchtest'. (line 1)
      {"{{ f is callable }} {{ 'a' is callable }} {{ x.items is callable }}",
       "{\"x\": {}}",
       "True False True"},
  });
}

TEST(ChatTemplateTable, Globals) {
  ExpectRenders({
      {"{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}",
       "{}",
       "[0, 1, 2] [1, 3, 5] [5, 3, 1] []"},
      {"{{ range(1000000) | length }}",
       "{}",
       kError},  // jinja2: OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).
      {"{{ dict(a=1, b='x') }} {{ dict({'z': 1}, y=2) }} {% set ns = namespace(a=1) %}{% set ns.b = 2 %}{{ ns.a }}{{ ns.b }}{{ ns.c is defined }}",
       "{}",
       "{'a': 1, 'b': 'x'} {'z': 1, 'y': 2} 12False"},
      {"{% set x = 1 %}{% set x.attr = 2 %}",
       "{}",
       kError},  // jinja2: TemplateRuntimeError: cannot assign attribute on non-namespace object
      {"{{ raise_exception('Only user and assistant roles are supported!') }}",
       "{}",
       kError},  // jinja2: raise_exception: Only user and assistant roles are supported!
      {"{{ strftime_now('%Y') | length }} {{ strftime_now('') }}|",
       "{}",
       "4 |"},
  });
}

TEST(ChatTemplateTable, Sandbox) {
  ExpectRenders({
      {"{{ xs.append(3) }}",
       "{\"xs\": [1]}",
       kError},  // jinja2: SecurityError: access to attribute 'append' of 'list' object is unsafe.
      {"{{ d.update({'a': 1}) }}",
       "{\"d\": {}}",
       kError},  // jinja2: SecurityError: access to attribute 'update' of 'dict' object is unsafe.
      {"{{ d.pop('a') }}",
       "{\"d\": {\"a\": 1}}",
       kError},  // jinja2: SecurityError: access to attribute 'pop' of 'dict' object is unsafe.
      {"{{ xs.__class__ }}",
       "{\"xs\": []}",
       ""},
      {"{{ ''.__class__.__mro__ }}",
       "{}",
       kError},  // jinja2: SecurityError: access to attribute '__class__' of 'str' object is unsafe.
      {"{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}",
       "{\"d\": {\"a\": 1}}",
       "1 dflt None ['a'] [1] [('a', 1)]"},
  });
}

TEST(ChatTemplateTable, Expressions) {
  ExpectRenders({
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 'x') %}{{ t }} {{ (1,) }} {{ () }} {% set l = [1, [2, 3]] %}{{ l[1][0] }} {{ {'a': {'b': 1}}['a']['b'] }} {{ {'a': 1}.a }}",
       "{}",
       "12 (1, 'x') (1,) () 2 1 1"},
      {"{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]",
       "{}",
       "[inner 2]"},
      {"{{ 'yes' if 1 > 0 else 'no' }} {{ 'a' if false else 'b' if true else 'c' }} {{ [1, 2][0:1] }} {{ (1, 2, 3)[1:] }} {{ [1, 2, 3][::-1] }}",
       "{}",
       "yes b [1] (2, 3) [3, 2, 1]"},
      {"{{ -1 | abs }} {{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 'a' ~ 1 + 2 }} {{ not 1 == 2 }}",
       "{}",
       kError},  // jinja2: TypeError: can only concatenate str (not "int") to str
      {"{{ 1 if x }}|{{ x.y if x }}|",
       "{}",
       "||"},
      {"{{ messages[0].content }} {{ messages[0]['content'] }} {{ messages | map(attribute='role') | join }} {{ messages[-1].role }}",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
       "hi hi userassistant assistant"},
  });
}

TEST(ChatTemplateTable, Syntax) {
  ExpectRenders({
      {"{% for x in %}{% endfor %}",
       "{}",
       kError},  // jinja2: syntax: Expected an expression, got 'end of statement block' (line 1)
      {"{% if true %}unclosed",
       "{}",
       kError},  // jinja2: syntax: Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed
      {"{% endif %}",
       "{}",
       kError},  // jinja2: syntax: Encountered unknown tag 'endif'. (line 1)
      {"{{ 'unterminated }}",
       "{}",
       kError},  // jinja2: syntax: unexpected char "'" at 3 (line 1)
      {"{{ 1 + }}",
       "{}",
       kError},  // jinja2: syntax: unexpected 'end of print statement' (line 1)
      {"{% foo %}",
       "{}",
       kError},  // jinja2: syntax: Encountered unknown tag 'foo'. (line 1)
      {"line1\nline2\n{{ x | nosuch }}",
       "{}",
       kError},  // jinja2: syntax: No filter named 'nosuch'. (line 3)
      {"{{ x",
       "{}",
       kError},  // jinja2: syntax: unexpected end of template, expected 'end of print statement'. (line 1)
      {"{% set %}",
       "{}",
       kError},  // jinja2: syntax: Expected an expression, got 'end of statement block' (line 1)
      {"{% macro m( %}{% endmacro %}",
       "{}",
       kError},  // jinja2: syntax: expected token 'name', got '%' (line 1)
      {"{# unclosed comment",
       "{}",
       kError},  // jinja2: syntax: Missing end of comment tag (line 1)
      {"{% for x in xs %}{% else %}{% else %}{% endfor %}",
       "{}",
       kError},  // jinja2: syntax: Encountered unknown tag 'else'. Jinja was looking for the following tags: 'endfor'. The innermost block that needs to be closed is 'for'. (lin
      {"{{ a.b.c(1, x=2)[1:2] | join('x') is not none }}",
       "{}",
       kError},  // jinja2: UndefinedError: 'a' is undefined
      {"{% break %}",
       "{}",
       kError},  // jinja2: syntax: SyntaxError: 'break' outside loop (<template>, line 11)
      {"{{ x is }}",
       "{}",
       kError},  // jinja2: syntax: expected token 'name', got 'end of print statement' (line 1)
  });
}

}  // namespace
}  // namespace kvserve
