// The Jinja chat-template interpreter, feature by feature. Expected strings are
// what Python jinja2 3.1 renders with transformers' settings
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks); the
// differential test (chat_template_differential_test.py) checks real
// templates against jinja2 itself.
#include <string>

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

}  // namespace
}  // namespace kvserve
