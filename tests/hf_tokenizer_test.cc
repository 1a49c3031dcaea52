// HfTokenizer against the Hugging Face fixtures (cases.json, made by Python
// `tokenizers` 0.23.2) and hand-checked behaviors: added tokens and their
// flags, byte fallback, round trips, invalid UTF-8, long words, threads.
// The broad comparison with `tokenizers` is tests/tokenizer_diff_test.py.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/text/hf/pattern.h"
#include "engine/text/hf_tokenizer.h"
#include "engine/text/utf8.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/hf_tokenizer_test_util.h"

namespace kvserve {
namespace {

using ::kvserve::testing::LoadFixtureTokenizer;
using ::kvserve::testing::TokenizerFixtureDir;
using Ids = std::vector<int32_t>;

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(kvserve::testing::ReadFile(path));
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

// Every case in cases.json: ids, ids with special tokens, and the decoded text.
TEST_P(FixtureTest, ReproducesEveryCase) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  const nlohmann::json cases = ReadJson(TokenizerFixtureDir(GetParam()) + "/cases.json");
  ASSERT_EQ(cases["tokenizers_version"], "0.23.2");
  ASSERT_GE(cases["cases"].size(), 10u);
  for (const auto& c : cases["cases"]) {
    const std::string text = c["text"];
    SCOPED_TRACE(text);
    EXPECT_EQ(*tokenizer->Encode(text, false), c["ids"].get<Ids>());
    EXPECT_EQ(*tokenizer->Encode(text, true), c["ids_with_special"].get<Ids>());
    EXPECT_EQ(tokenizer->Decode(c["ids"].get<Ids>(), false), c["decoded"].get<std::string>());
  }
}

// Text that must survive encode → decode unchanged: emoji (ZWJ sequences,
// flags, skin tones), CJK, combining marks, whitespace runs, control chars.
TEST_P(FixtureTest, RoundTripsVariedText) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  const std::string texts[] = {
      "family 👨‍👩‍👧‍👦 flag 🇫🇷 thumbs 👍🏽 heart ❤️",
      "日本語のテキスト、한국어 문장, 中文混合English",
      "e\u0301 a\u0308 Z\u0351\u036b \u0915\u094d\u0937",
      "tabs\t\tand\n\n\nnewlines\r\n   spaces    end",
      "\x01\x02\x1b[31m\x7f control",
      "\xef\xbf\xbd replacement char",
      "$$\\frac{a}{b}$$ and x_{i,j}^2",
      std::string(300, ' ') + "x" + std::string(500, 'y'),
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    const Ids ids = *tokenizer->Encode(text, /*add_special_tokens=*/false);
    EXPECT_EQ(tokenizer->Decode(ids, /*skip_special_tokens=*/false), text);
  }
}

TEST_P(FixtureTest, RefusesInvalidUtf8) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  for (const std::string bad : {"\xff", "abc\xe4\xb8", "\xc0\x80", "\xed\xa0\x80"}) {
    const auto ids = tokenizer->Encode(bad, true);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// A 100,000-character word must not take quadratic time (rank-based merging).
TEST_P(FixtureTest, LongWordIsFast) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  const std::string text = std::string(100000, 'a') + " " + std::string(30000, 'b');
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = *tokenizer->Encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(tokenizer->Decode(ids, false), text);
}

// Concurrent calls (the gRPC threads share one tokenizer and its word cache).
TEST_P(FixtureTest, ConcurrentEncodesAgree) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back(absl::StrCat("word", i, " 词", i % 7, " x"));
  std::vector<Ids> expected;
  for (const auto& text : texts) expected.push_back(*tokenizer->Encode(text, true));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = t; i < texts.size(); i += 2) {
          if (*tokenizer->Encode(texts[i], true) != expected[i]) ++mismatches;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest,
                         ::testing::ValuesIn(kvserve::testing::kTokenizerFixtures));

// The spm fixture's byte tokens are special added tokens: skipped on request.
TEST(HfTokenizerTest, SpecialByteTokensAreSkippedLikeTokenizers) {
  auto tokenizer = LoadFixtureTokenizer("spm-bpe-bytefallback");
  ASSERT_NE(tokenizer, nullptr);
  const Ids ids = *tokenizer->Encode("emoji 🤖 x", true);
  EXPECT_EQ(tokenizer->Decode(ids, /*skip_special_tokens=*/true), "emoji  x");
  EXPECT_EQ(tokenizer->Decode(ids, /*skip_special_tokens=*/false), "<s> emoji 🤖 x");
}

TEST(HfTokenizerTest, SpecialTokensInText) {
  auto tokenizer = LoadFixtureTokenizer("bytelevel-bpe");
  ASSERT_NE(tokenizer, nullptr);
  const Ids ids = *tokenizer->Encode("hi<|eot_id|><|begin_of_text|>there<|end_of_text|>", true);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids[0], 0);  // BOS from the template
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  EXPECT_EQ(tokenizer->Decode(ids, /*skip_special_tokens=*/true), "hithere");
  EXPECT_EQ(tokenizer->Decode(ids, false),
            "<|begin_of_text|>hi<|eot_id|><|begin_of_text|>there<|end_of_text|>");
  // A partial special token is plain text.
  const Ids partial = *tokenizer->Encode("<|eot_id", false);
  EXPECT_EQ(std::count(partial.begin(), partial.end(), 2), 0);
  EXPECT_EQ(tokenizer->vocab_size(), 1200);
}

// Characters missing from the SentencePiece-style vocabulary become
// <0xXX> tokens (ids 3..258) and decode back to the same text.
TEST(HfTokenizerTest, ByteFallbackRoundTrips) {
  auto tokenizer = LoadFixtureTokenizer("spm-bpe-bytefallback");
  ASSERT_NE(tokenizer, nullptr);
  const std::string text = "rare 🦜 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 鱻";
  const Ids ids = *tokenizer->Encode(text, false);
  const int byte_tokens = std::count_if(ids.begin(), ids.end(), [](int32_t id) {
    return id >= 3 && id <= 258;
  });
  EXPECT_GE(byte_tokens, 4 + 7 * 4);
  EXPECT_EQ(tokenizer->Decode(ids, false), text);
  // An incomplete byte sequence decodes to one U+FFFD per byte, as ByteFallback does.
  EXPECT_EQ(tokenizer->Decode({3 + 0xF0, 3 + 0x9F}, false), "\xef\xbf\xbd\xef\xbf\xbd");
  // Unknown ids decode to nothing.
  EXPECT_EQ(tokenizer->Decode({-1, 1 << 20}, false), "");
}

// A lone byte from the byte-level alphabet is invalid UTF-8: U+FFFD.
TEST(HfTokenizerTest, ByteLevelDecodeIsValidUtf8) {
  auto tokenizer = LoadFixtureTokenizer("bytelevel-bpe");
  ASSERT_NE(tokenizer, nullptr);
  int replaced = 0;
  for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
    const std::string text = tokenizer->Decode({id}, false);
    ASSERT_EQ(SanitizeUtf8(text), text) << id;
    replaced += text == "\xef\xbf\xbd";
  }
  EXPECT_GE(replaced, 64);  // tokens of one non-ASCII byte, e.g. a lead byte alone
}

// Added-token flags on a tiny vocabulary; expectations from `tokenizers` 0.23.2.
std::unique_ptr<HfTokenizer> TinyTokenizer(const std::string& flags) {
  const std::string json = absl::StrCat(
      R"({"added_tokens": [{"id": 3, "content": "<m>", "special": false, "normalized": false)",
      flags, R"(}], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, "<m>": 3, )",
      R"("<": 4, "m": 5, ">": 6, "ab": 7}, "merges": [["a", "b"]]}})");
  auto tokenizer = HfTokenizer::FromJson(json);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

TEST(HfTokenizerTest, AddedTokenFlags) {
  struct Case {
    std::string flags, text;
    Ids ids;
  };
  const Case cases[] = {
      {"", "a <m> b", {0, 2, 3, 2, 1}},
      {"", "ab <m>", {7, 2, 3}},
      {R"(, "lstrip": true, "rstrip": true)", "a <m> b", {0, 3, 1}},
      {R"(, "lstrip": true, "rstrip": true)", " <m>  <m> ", {3, 3}},
      {R"(, "lstrip": true)", "a <m> b", {0, 3, 2, 1}},
      {R"(, "lstrip": true)", " <m>  <m> ", {3, 3, 2}},
      {R"(, "single_word": true)", "a<m>b", {0, 4, 5, 6, 1}},
      {R"(, "single_word": true)", "<m>ab", {4, 5, 6, 7}},
      {R"(, "single_word": true)", "a <m> b", {0, 2, 3, 2, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags + " | " + c.text);
    auto tokenizer = TinyTokenizer(c.flags);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(*tokenizer->Encode(c.text, true), c.ids);
  }
  // No decoder: tokens joined by spaces; special added tokens skipped on request.
  EXPECT_EQ(TinyTokenizer("")->Decode({0, 3, 1}, true), "a <m> b");
  EXPECT_EQ(TinyTokenizer(R"(, "special": true)")->Decode({0, 3, 1}, true), "a b");
}

// Oniguruma's \s (what Hugging Face uses) includes U+0085 but not U+180E; PCRE2's differs.
TEST(PatternTest, WhitespaceMatchesOniguruma) {
  auto space = *hf::Pattern::Regex("\\s+");
  EXPECT_EQ(space->FindAll("a\xc2\x85" "b").size(), 1u);            // U+0085
  EXPECT_EQ(space->FindAll("a\xe1\xa0\x8e" "b").size(), 0u);        // U+180E
  EXPECT_EQ(space->FindAll("a\xe3\x80\x80\t\n b").size(), 1u);      // U+3000, tab, newline
  auto not_space = *hf::Pattern::Regex("[^\\s\\p{L}]+|\\S");
  EXPECT_EQ(not_space->FindAll("\xe1\xa0\x8e").size(), 1u);
  EXPECT_EQ(hf::OnigurumaToPcre2("[^\\s]\\S"),
            "[^\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}][^\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}]");
  // Caseless contractions match the long s (ſ) too, as in Oniguruma.
  auto contraction = *hf::Pattern::Regex("(?i:'s|'t)");
  EXPECT_EQ(contraction->FindAll("x'S y'\xc5\xbf z'T").size(), 3u);
}

}  // namespace
}  // namespace kvserve
