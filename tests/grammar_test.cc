// The grammar core: GBNF parsing and its errors, the pushdown matcher on
// accept / reject tables, and token masks against a brute-force check of
// every token.
#include <string>
#include <vector>

#include "engine/grammar/compiled_constraint.h"
#include "engine/grammar/constraint_compiler.h"
#include "engine/grammar/gbnf.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvserve::grammar {
namespace {

using ::testing::HasSubstr;

bool Matches(std::string_view gbnf, std::string_view input) {
  absl::StatusOr<bool> m = GbnfMatches(gbnf, input);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.value_or(false);
}

struct Case {
  const char* grammar;
  std::vector<const char*> accept, reject;
};

TEST(GbnfTest, AcceptsAndRejects) {
  const std::vector<Case> cases = {
      {R"(root ::= "yes" | "no")", {"yes", "no"}, {"", "ye", "yess", "No"}},
      {R"(root ::= [a-c]+)", {"a", "abcabc"}, {"", "abd", "A"}},
      {R"(root ::= [^"\\]*)", {"", "abc", "h\xC3\xA9llo", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"},
       {"a\"b", "\\", "\xC3", "\xFF"}},
      {R"(root ::= "a"? "b"{2,3} "c"{2} "d"{1,})",
       {"bbccd", "abbbccdd"}, {"bccd", "bbbbccd", "bbcd", "bbcc"}},
      {"root ::= item (\",\" item)*\nitem ::= [0-9]+ # a number\n",
       {"1", "1,22,333"}, {"", "1,", ",1", "1,,2"}},
      {R"(root ::= ( "x" | "y" ) ( "z" )*)", {"x", "yzz"}, {"z", "xy"}},
      {R"(root ::= [α-ω]+ "\u00e9" "\x41")", {"\xCE\xB1\xCF\x89\xC3\xA9" "A"}, {"a\xC3\xA9" "A"}},
      {R"(root ::= . .)", {"ab", "\xE2\x82\xAC\xF0\x9F\x98\x80"}, {"a", "abc"}},
      // Nullable items under repetition terminate: (a?)* is a tail call.
      {R"(root ::= ("a"?)* "b")", {"b", "aab"}, {"", "aa"}},
      // Recursion that consumes first (nested arrays).
      {"root ::= arr\narr ::= \"[\" (arr (\",\" arr)*)? \"]\"",
       {"[]", "[[],[[]]]"}, {"[", "[[]", "[],[]"}},
      {"root ::= \"\\n\" [\\t ]\n", {"\n\t", "\n "}, {"\n", " "}},
  };
  for (const Case& c : cases) {
    for (const char* s : c.accept) EXPECT_TRUE(Matches(c.grammar, s)) << c.grammar << " on " << s;
    for (const char* s : c.reject) EXPECT_FALSE(Matches(c.grammar, s)) << c.grammar << " on " << s;
  }
}

TEST(GbnfTest, ErrorsNameLineColumnAndProblem) {
  struct Bad {
    const char* grammar;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {"", "empty"},
      {"root ::= value\n", "line 1, column 10: undefined rule 'value'"},
      {"root ::= \"abc", "unterminated string literal"},
      {"root ::= [a-", "unterminated character class"},
      {"root ::= (\"a\"", "unbalanced '('"},
      {"root ::= \"a\" )", "unbalanced ')'"},
      {"root = \"a\"", "expected '::='"},
      {"expr ::= \"a\"", "no rule named root"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "rule 'expr' is left-recursive"},
      {"root ::= \"a\"{3,2}", "n < m"},
      {"root ::= \"\\q\"", "unknown escape"},
      {"root ::= [z-a]", "out of order"},
  };
  for (const Bad& b : bad) {
    absl::StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf(b.grammar);
    ASSERT_FALSE(g.ok()) << b.grammar;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << b.grammar;
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(b.message)) << b.grammar;
  }
}

TEST(GbnfTest, LimitsAreResourceExhausted) {
  GbnfLimits limits;
  limits.max_bytes = 100;
  absl::StatusOr<std::shared_ptr<const Grammar>> g =
      ParseGbnf("root ::= \"" + std::string(200, 'a') + "\"", limits);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted);
  limits = GbnfLimits();
  limits.max_elements = 1000;
  g = ParseGbnf("root ::= \"a\"{600} \"b\"{600}", limits);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted) << g.status();
}

std::shared_ptr<const TokenVocabulary> TestVocabulary() {
  std::vector<std::string> tokens = {"", "a", "b", "ab", "abc", "\"", "{", "}", "{\"", "\":",
                                     " ", "1", "12", "x", "\xC3\xA9", "\xC3", "\xA9", "true"};
  for (int i = 0; i < 300; ++i) tokens.push_back(std::string(1 + i % 3, char('a' + i % 26)));
  return std::make_shared<TokenVocabulary>(tokens);
}

// The mask of every state reached along `text`, against advancing each
// token's bytes one by one from that state.
void CheckMasksAlong(CompiledConstraint& c, std::string_view text) {
  const TokenVocabulary& v = c.vocabulary();
  int32_t state = c.Start();
  for (size_t i = 0; i <= text.size(); ++i) {
    std::vector<uint32_t> mask(v.mask_words(), 0);
    c.OrMask(state, mask.data());
    for (int32_t id = 0; id < v.size(); ++id) {
      const bool allowed = (mask[id >> 5] >> (id & 31)) & 1;
      const bool brute = !v.bytes(id).empty() && c.AdvanceBytes(state, v.bytes(id)) != kDeadState;
      EXPECT_EQ(allowed, brute) << "token " << id << " '" << v.bytes(id) << "' after '"
                                << text.substr(0, i) << "'";
    }
    if (i < text.size()) state = c.AdvanceBytes(state, text.substr(i, 1));
    ASSERT_NE(state, kDeadState);
  }
  EXPECT_TRUE(c.Accepting(state));
}

TEST(TokenMaskTest, MatchesBruteForce) {
  auto grammar = ParseGbnf(
      "root ::= \"{\" ws pair (\",\" ws pair)* \"}\"\n"
      "pair ::= \"\\\"\" [a-z\\u00e9]* \"\\\":\" ws (num | \"true\")\n"
      "num ::= [0-9]+\nws ::= \" \"?");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  CompiledConstraint c(*grammar, TestVocabulary(), "test");
  CheckMasksAlong(c, "{\"ab\xC3\xA9\": 12, \"x\":true}");
  EXPECT_TRUE(c.Complete(c.AdvanceBytes(c.Start(), "{\"a\":1}")));
  EXPECT_FALSE(c.Complete(c.AdvanceBytes(c.Start(), "{\"a\":1")));
}

TEST(ConstraintCompilerTest, ChoiceCachesAndLimits) {
  ConstraintLimits limits;
  limits.max_bytes = 64;
  ConstraintCompiler compiler(TestVocabulary(), limits);
  ConstraintSpec spec{ConstraintSpec::Kind::kChoice, "", {"ab", "abc", "x \"q\" \\"}};
  absl::StatusOr<std::shared_ptr<CompiledConstraint>> a = compiler.Compile(spec);
  ASSERT_TRUE(a.ok()) << a.status();
  for (const char* s : {"ab", "abc", "x \"q\" \\"}) {
    EXPECT_TRUE((*a)->Accepting((*a)->AdvanceBytes((*a)->Start(), s))) << s;
  }
  EXPECT_FALSE((*a)->Accepting((*a)->AdvanceBytes((*a)->Start(), "a")));
  absl::StatusOr<std::shared_ptr<CompiledConstraint>> b = compiler.Compile(spec);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(compiler.cache_hits(), 1u);

  spec.choices = {"ok", ""};
  EXPECT_THAT(std::string(compiler.Compile(spec).status().message()), HasSubstr("choice[1] is empty"));
  spec = {ConstraintSpec::Kind::kGrammar, "root ::= \"" + std::string(100, 'a') + "\""};
  absl::Status s = compiler.Compile(spec).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("grammar: 111 bytes, more than the server's limit of 64"));
}

}  // namespace
}  // namespace kvserve::grammar
