// Streaming detokenization and stop strings with the real Hugging Face
// tokenizers: ids fed one at a time give deltas that are whole UTF-8
// characters and concatenate to exactly Decode(all ids).
#include <random>

#include "engine/text/detokenizer.h"
#include "engine/text/hf_tokenizer.h"
#include "engine/text/utf8.h"
#include "gtest/gtest.h"
#include "tests/hf_tokenizer_test_util.h"

namespace kvserve {
namespace {

using ::kvserve::testing::LoadFixtureTokenizer;
using Ids = std::vector<int32_t>;

// Streams `ids`; checks every delta and returns them.
std::vector<std::string> Stream(const Tokenizer& tokenizer, const Ids& ids) {
  IncrementalDetokenizer detokenizer(tokenizer);
  std::vector<std::string> deltas;
  std::string all;
  for (int32_t id : ids) {
    deltas.push_back(detokenizer.Append(id));
    EXPECT_EQ(SanitizeUtf8(deltas.back()), deltas.back()) << "delta splits a character";
    all += deltas.back();
  }
  deltas.push_back(detokenizer.Finish());
  all += deltas.back();
  EXPECT_EQ(all, tokenizer.Decode(ids, /*skip_special_tokens=*/true));
  return deltas;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string all;
  for (const auto& part : parts) all += part;
  return all;
}

const char* const kTexts[] = {
    "Hello, world! The quick brown fox.",
    "   leading spaces and trailing   ",
    "注意力机制的核心公式是什么？",
    "emoji 🤖🚀 family 👨‍👩‍👧‍👦 flag 🇫🇷 é ñ ü",
    "def f(x):\n    return x ** 2\n\n\t# done",
    "<|begin_of_text|>special<|eot_id|> and <s> too </s>",
    "rare 🦜 𝔘𝔫𝔦 鱻 Z\u0351\u036b",
    "$$\\sqrt{d_k}$$ 12345678",
};

class StreamingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingTest, EncodedTextsStreamExactly) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  for (const char* text : kTexts) {
    SCOPED_TRACE(text);
    const Ids ids = *tokenizer->Encode(text, /*add_special_tokens=*/true);
    const std::string streamed = Join(Stream(*tokenizer, ids));
    EXPECT_EQ(streamed, tokenizer->Decode(ids, true));
  }
}

// Random ids (any token, special ones included, and ids out of range) in random
// lengths: the invariants hold even where the text is full of U+FFFD.
TEST_P(StreamingTest, RandomIdsStreamExactly) {
  auto tokenizer = LoadFixtureTokenizer(GetParam());
  ASSERT_NE(tokenizer, nullptr);
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    Ids ids(rng() % 40);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % (tokenizer->vocab_size() + 2));
    Stream(*tokenizer, ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamingTest,
                         ::testing::Values(kvserve::testing::kTokenizerFixtures[0],
                                           kvserve::testing::kTokenizerFixtures[1],
                                           kvserve::testing::kLlama2Style));

// A 4-byte emoji from four <0xXX> byte-fallback tokens: nothing until the run
// of byte tokens is closed by another token (one more byte could still turn
// the whole run into U+FFFD), then the emoji and that token's text together.
TEST(HfStreamingTest, ByteFallbackWaitsForWholeCharacter) {
  auto tokenizer = LoadFixtureTokenizer(kvserve::testing::kLlama2Style);
  ASSERT_NE(tokenizer, nullptr);
  const Ids ids = *tokenizer->Encode("ab🦜c", false);
  const std::vector<std::string> deltas = Stream(*tokenizer, ids);
  // ▁ a b <0xF0> <0x9F> <0xA6> <0x9C> c
  ASSERT_EQ(ids.size(), 8u);
  for (int i = 3; i < 7; ++i) EXPECT_GE(ids[i], 3) << i;  // byte tokens
  EXPECT_EQ(deltas[3], "");
  EXPECT_EQ(deltas[4], "");
  EXPECT_EQ(deltas[5], "");
  EXPECT_EQ(deltas[6], "");
  EXPECT_EQ(deltas[7], "🦜c");
  EXPECT_EQ(Join(deltas), "ab🦜c");
}

// A valid byte run that a later byte makes invalid: Hugging Face decodes the
// whole run as U+FFFD, so the emoji must never have been sent.
TEST(HfStreamingTest, ByteRunRewrittenByLaterByte) {
  auto tokenizer = LoadFixtureTokenizer(kvserve::testing::kLlama2Style);
  ASSERT_NE(tokenizer, nullptr);
  Ids ids = *tokenizer->Encode("a🦜", false);
  ids.push_back(3 + 0xF0);  // <0xF0>: a lead byte with nothing after it
  const std::string full = tokenizer->Decode(ids, true);
  EXPECT_EQ(full, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(Join(Stream(*tokenizer, ids)), full);
}

// SentencePiece ▁: the first word's prepended space is stripped, later ones kept.
TEST(HfStreamingTest, SentencePieceSpacesSurvive) {
  auto tokenizer = LoadFixtureTokenizer(kvserve::testing::kLlama2Style);
  ASSERT_NE(tokenizer, nullptr);
  const Ids ids = *tokenizer->Encode("Hi there  you", true);
  const std::vector<std::string> deltas = Stream(*tokenizer, ids);
  EXPECT_EQ(Join(deltas), "Hi there  you");
  EXPECT_NE(deltas[1].substr(0, 1), " ");  // the leading ▁ of the first word is not a space
}

// Byte-level: a CJK character is three byte tokens; no delta splits it.
TEST(HfStreamingTest, ByteLevelMultiByteCharacters) {
  auto tokenizer = LoadFixtureTokenizer("bytelevel-bpe");
  ASSERT_NE(tokenizer, nullptr);
  const Ids ids = *tokenizer->Encode("鱻🦜", false);
  const std::vector<std::string> deltas = Stream(*tokenizer, ids);
  EXPECT_EQ(Join(deltas), "鱻🦜");
  int nonempty = 0;
  for (const std::string& d : deltas) nonempty += !d.empty();
  EXPECT_EQ(nonempty, 2);
}

// Stop strings that span token boundaries cut the text right before them.
TEST(HfStreamingTest, StopStringsAcrossTokens) {
  struct Case {
    std::string text;
    std::vector<std::string> stops;
    std::string expected;
  };
  const Case cases[] = {
      {"The answer is 42. END of text", {"END"}, "The answer is 42. "},
      {"The answer is 42. END of text", {"is 42"}, "The answer "},
      {"注意力机制的核心公式是什么？", {"核心公"}, "注意力机制的"},
      {"emoji 🤖🚀 done", {"🚀 d", "zzz"}, "emoji 🤖"},
      {"no stop here", {"absent"}, "no stop here"},
  };
  for (const std::string name : {"bytelevel-bpe", kvserve::testing::kLlama2Style}) {
    auto tokenizer = LoadFixtureTokenizer(name);
    ASSERT_NE(tokenizer, nullptr);
    for (const Case& c : cases) {
      SCOPED_TRACE(name + ": " + c.text);
      const Ids ids = *tokenizer->Encode(c.text, true);
      IncrementalDetokenizer detokenizer(*tokenizer);
      StopStringMatcher matcher(c.stops);
      std::string out;
      for (int32_t id : ids) {
        out += matcher.Feed(detokenizer.Append(id));
        if (matcher.stopped()) break;
      }
      if (!matcher.stopped()) out += matcher.Feed(detokenizer.Finish()) + matcher.Flush();
      EXPECT_EQ(out, c.expected);
      EXPECT_EQ(matcher.stopped(), c.expected != c.text);
    }
  }
}

}  // namespace
}  // namespace kvserve
