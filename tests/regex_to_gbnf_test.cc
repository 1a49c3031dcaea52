// Regular expressions to GBNF (engine/grammar/regex_to_gbnf.h): each regex's
// grammar, run by the real matcher, accepts exactly the strings the regex
// matches in full; what is not regular (or not supported) is refused with
// its offset.
#include "engine/grammar/regex_to_gbnf.h"

#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve::grammar {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string regex;
  std::vector<std::string> accept, reject;
};

TEST(RegexToGbnfTest, AcceptsExactlyTheFullMatches) {
  const std::vector<Case> cases = {
      {"abc", {"abc"}, {"", "ab", "abcd", "ABC"}},
      {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
      {"ab*c", {"ac", "abbbc"}, {"abab", "a"}},
      {"(ab)*c", {"c", "ababc"}, {"abc c", "aab"}},
      {"(?:ab)+", {"ab", "abab"}, {"", "aba"}},
      {"colou?r", {"color", "colour"}, {"colouur"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,}", {"aa", "aaaaaa"}, {"a"}},
      {"a{1,3}b", {"ab", "aaab"}, {"b", "aaaab"}},
      {"a{0}b", {"b"}, {"ab"}},
      {"a+?b*?c??", {"a", "aabbc"}, {"b"}},  // lazy: the same language
      {"[a-c]+", {"abcab"}, {"abd", ""}},
      {"[^a-c]", {"d", "\xC3\xA9", "\n"}, {"a", "b", "dd"}},
      {"[-a]", {"-", "a"}, {"b"}},
      {"[a-]", {"-", "a"}, {"b"}},
      {"\\d{3}-\\d{4}", {"555-1234"}, {"5551234", "55-1234", "abc-defg"}},
      {"\\w+", {"snake_case9"}, {"kebab-case", ""}},
      {"\\s", {" ", "\t", "\n", "\xC2\xA0"}, {"a"}},
      {"\\D\\W\\S", {"a-b", "--x"}, {"1-b", "a_b", "a- "}},
      {"[\\d\\s]+", {"1 2\t3"}, {"a"}},
      {"[^\\d]", {"a"}, {"1"}},
      {"[\\D]", {"a"}, {"1"}},
      {".", {"a", "\xE2\x82\xAC", "\"", "\\", "\r"}, {"\n", "ab", ""}},
      {"a.c", {"abc", "a.c"}, {"a\nc"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/\\^\\$", {".*+?()[]{}|\\/^$"}, {"x"}},
      {"\\x41\\u00e9\\u{1F600}\\t\\n", {"A\xC3\xA9\xF0\x9F\x98\x80\t\n"}, {"A"}},
      {"\\cJ", {"\n"}, {"J"}},
      {"\"quoted\"", {"\"quoted\""}, {"quoted"}},
      {"^abc$", {"abc"}, {"xabc", "abcx"}},
      {"^a$|^b$", {"a", "b"}, {"ab"}},
      {"x{", {"x{"}, {"x"}},  // not a quantifier: a literal brace
      {"x{1,a}", {"x{1,a}"}, {"x"}},
      {"é+", {"\xC3\xA9\xC3\xA9"}, {"\xC3"}},
      {"[α-ω]{2}", {"\xCE\xB1\xCF\x89"}, {"ab"}},
      {"(a*)*b", {"b", "aaab"}, {"a"}},  // nullable under a star
      {"(a|b?)+c", {"c", "abbac"}, {"ca"}},
      {"((((a))))", {"a"}, {"aa"}},
      {"(?<year>\\d{4})-(?<month>\\d{2})", {"2024-05"}, {"24-05"}},
      {"(?P<word>\\w+)!", {"hi!"}, {"!"}},  // Python's spelling of a named group
      {"[+\\-]?\\d+(\\.\\d+)?([eE][+\\-]?\\d+)?", {"-1.5e10", "42", "+3"}, {"1.", "e5", "--1"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> gbnf = RegexToGbnf(c.regex);
    ASSERT_TRUE(gbnf.ok()) << c.regex << ": " << gbnf.status();
    for (const std::string& s : c.accept) {
      absl::StatusOr<bool> m = GbnfMatches(*gbnf, s);
      ASSERT_TRUE(m.ok()) << c.regex << " -> " << *gbnf << ": " << m.status();
      EXPECT_TRUE(*m) << c.regex << " should match '" << s << "'\n" << *gbnf;
    }
    for (const std::string& s : c.reject) {
      absl::StatusOr<bool> m = GbnfMatches(*gbnf, s);
      ASSERT_TRUE(m.ok()) << c.regex << ": " << m.status();
      EXPECT_FALSE(*m) << c.regex << " should not match '" << s << "'\n" << *gbnf;
    }
  }
}

TEST(RegexToGbnfTest, ExpressionNeedsNoRules) {
  std::string rules;
  absl::StatusOr<std::string> expr = RegexToGbnfExpression("[a-z]+(-[a-z]+)*", "slug", rules);
  ASSERT_TRUE(expr.ok()) << expr.status();
  EXPECT_EQ(rules, "");
  absl::StatusOr<bool> m = GbnfMatches("root ::= \"<\" " + *expr + " \">\"\n", "<kebab-case>");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(*m);
}

TEST(RegexToGbnfTest, RefusesWhatIsNotRegularWithItsOffset) {
  struct Bad {
    std::string regex;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"(a)\\1", "regex: at offset 3: back-references are not supported"},
      {"(?<n>a)\\k<n>", "regex: at offset 7: back-references are not supported"},
      {"a(?=b)", "regex: at offset 1: look-around is not supported"},
      {"a(?!b)", "regex: at offset 1: look-around is not supported"},
      {"(?<=a)b", "regex: at offset 0: look-around is not supported"},
      {"(?<!a)b", "regex: at offset 0: look-around is not supported"},
      {"\\bword\\b", "regex: at offset 0: word boundaries are not supported"},
      {"(?P<n>a)(?P=n)", "regex: at offset 8: back-references are not supported"},
      {"\\Aabc\\Z", "regex: at offset 0: unknown escape '\\A'"},
      {"a\\z", "regex: at offset 1: unknown escape '\\z'"},
      {"(?i)abc", "regex: at offset 0: unsupported group syntax"},
      {"abc)", "regex: at offset 3: unbalanced ')'"},
      {"(abc", "regex: at offset 0: unbalanced '('"},
      {"[abc", "regex: at offset 0: unterminated character class"},
      {"*a", "regex: at offset 0: nothing to repeat"},
      {"a**", "regex: at offset 2: nothing to repeat"},
      {"a{2}{3}", "regex: at offset 4: nothing to repeat"},
      {"a{3,2}", "regex: at offset 1: repetition {m,n} with n < m"},
      {"a{99999}", "regex: at offset 1: repetition count above 10000"},
      {"a^b", "regex: at offset 1: '^' is supported only at the start"},
      {"a$b", "regex: at offset 1: '$' is supported only at the end"},
      {"(^a)", "regex: at offset 1: '^' is supported only at the start"},
      {"[z-a]", "regex: at offset 1: range out of order"},
      {"[\\d-z]", "regex: at offset 1: a class escape cannot bound a range"},
      {"[]a]", "regex: at offset 0: character class matches nothing"},  // ECMAScript's []
      {"[^\\s\\S]", "regex: at offset 0: character class matches nothing"},
      {"abc\\", "regex: at offset 3: trailing backslash"},
      {"\\xZZ", "regex: at offset 0: malformed hexadecimal escape"},
      {"\\u{110000}", "regex: at offset 0: escape is not a Unicode scalar value"},
      {"\\p{L}", "regex: at offset 0: Unicode property escapes are not supported"},
      {"\\01", "regex: at offset 0: octal escapes are not supported"},
      {"a\xFF", "regex: at offset 1: invalid UTF-8"},
      {std::string(300, '(') + std::string(300, ')'), "groups nest deeper than 200"},
  };
  for (const Bad& b : bad) {
    absl::StatusOr<std::string> gbnf = RegexToGbnf(b.regex);
    ASSERT_FALSE(gbnf.ok()) << b.regex << " -> " << *gbnf;
    EXPECT_EQ(gbnf.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(gbnf.status().message()), HasSubstr(b.message)) << b.regex;
  }
}

}  // namespace
}  // namespace kvserve::grammar
