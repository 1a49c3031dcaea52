// Malformed or unsupported tokenizer.json files: each gives an
// InvalidArgumentError naming the field, never a crash or an exception.
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/text/hf_tokenizer.h"
#include "gtest/gtest.h"
#include "tests/hf_tokenizer_test_util.h"

namespace kvserve {
namespace {

// A valid minimal file; the cases below each break one part of it.
constexpr char kValid[] = R"({
  "added_tokens": [{"id": 0, "content": "<s>", "special": true, "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"},
  "post_processor": {"type": "TemplateProcessing",
                     "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
                     "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
  "decoder": {"type": "Fuse"},
  "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3},
            "merges": ["a b"]}
})";

struct BadCase {
  std::string name, from, to;  // replace `from` by `to` in kValid
  std::string expected;        // substring of the error message
};

std::string Mutate(const BadCase& c) {
  if (c.from.empty()) return c.to;
  std::string json = kValid;
  EXPECT_NE(json.find(c.from), std::string::npos) << c.name;
  return absl::StrReplaceAll(json, {{c.from, c.to}});
}

TEST(HfTokenizerErrorsTest, ValidBaseLoads) {
  auto tokenizer = HfTokenizer::FromJson(kValid);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ(*(*tokenizer)->Encode("ab a", true), (std::vector<int32_t>{0, 3, 1}));
}

TEST(HfTokenizerErrorsTest, EachMalformedFileNamesTheField) {
  const BadCase cases[] = {
      {"not json", "", "{\"model\": ", "not valid JSON"},
      {"not an object", "", "[1, 2]", "must be a JSON object"},
      {"no model", "", "{}", "model: is missing"},
      {"model type", R"("type": "BPE")", R"("type": "Unigram")", "unsupported model type"},
      {"merge of unknown", R"(["a b"])", R"(["a c"])", "model.merges[0]: merge of \"a\" and \"c\""},
      {"merged unknown", R"("ab": 3)", R"("ba": 3)", "merged token \"ab\" is not in model.vocab"},
      {"merge format", R"(["a b"])", R"(["a b c"])", "model.merges[0]"},
      {"merge list form", R"(["a b"])", R"([["a"]])", "model.merges[0]"},
      {"negative id", R"("a": 1)", R"("a": -1)", "model.vocab[\"a\"]: token id must not be negative"},
      {"id not int", R"("a": 1)", R"("a": "1")", "model.vocab[\"a\"]: token id must be an integer"},
      {"huge id", R"("a": 1)", R"("a": 99999999999)", "model.vocab[\"a\"]"},
      {"duplicate id", R"("b": 2)", R"("b": 1)", "model.vocab: id 1 is used by both"},
      {"vocab type", R"("vocab": {)", R"("vocab": [], "x": {)", "model.vocab: must be an object"},
      {"dropout", R"("dropout": null)", R"("dropout": 0.1)", "model.dropout"},
      {"unk missing", R"("unk_token": null)", R"("unk_token": "<unk>")", "model.unk_token"},
      {"normalizer type", R"("normalizer": null)", R"("normalizer": {"type": "Lowercase"})",
       "normalizer.type: unsupported normalizer type \"Lowercase\""},
      {"normalizer no type", R"("normalizer": null)", R"("normalizer": {"prepend": "x"})",
       "normalizer.type: is missing"},
      {"nested", R"("normalizer": null)",
       R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "x"},
          {"type": "Replace", "pattern": {"String": ""}, "content": "y"}]})",
       "normalizer.normalizers[1].pattern: empty string pattern"},
      {"bad regex", R"({"Regex": "\\s+"})", R"({"Regex": "(\\s+"})",
       "pre_tokenizer.pattern: invalid regex"},
      {"pattern form", R"({"Regex": "\\s+"})", R"({"Glob": "*"})", "pre_tokenizer.pattern"},
      {"behavior", R"("Isolated")", R"("Sideways")", "pre_tokenizer.behavior"},
      {"pre_tokenizer type", R"("type": "Split")", R"("type": "Whitespace")",
       "pre_tokenizer.type: unsupported pre_tokenizer type \"Whitespace\""},
      {"metaspace", R"("type": "Split")", R"("type": "Metaspace", "replacement": "ab")",
       "pre_tokenizer.replacement: must be exactly one character"},
      {"decoder type", R"({"type": "Fuse"})", R"({"type": "WordPiece"})",
       "decoder.type: unsupported decoder type \"WordPiece\""},
      {"decoder list", R"({"type": "Fuse"})", R"({"type": "Sequence", "decoders": 3})",
       "decoder.decoders: must be an array"},
      {"strip", R"({"type": "Fuse"})", R"({"type": "Strip", "content": " ", "start": -1})",
       "decoder: start and stop must not be negative"},
      {"post type", R"("type": "TemplateProcessing")", R"("type": "BertProcessing")",
       "post_processor.type: unsupported post_processor type \"BertProcessing\""},
      {"template token", R"("special_tokens": {"<s>")", R"("special_tokens": {"<x>")",
       "post_processor.special_tokens[\"<s>\"]: is missing"},
      {"template seq", R"({"Sequence": {"id": "A"}})", R"({"Sequence": {"id": "B"}})",
       "post_processor.single[1]"},
      {"added not array", R"("added_tokens": [)", R"("added_tokens": {"x": 1}, "y": [)",
       "added_tokens: must be an array"},
      {"added content", R"("content": "<s>")", R"("contents": "<s>")",
       "added_tokens[0].content: is missing"},
      {"added flag", R"("special": true)", R"("special": "yes")", "added_tokens[0].special"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto tokenizer = HfTokenizer::FromJson(Mutate(c));
    ASSERT_FALSE(tokenizer.ok());
    EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(tokenizer.status().message().find(c.expected), std::string::npos)
        << tokenizer.status().message();
  }
}

TEST(HfTokenizerErrorsTest, MissingFile) {
  auto tokenizer = HfTokenizer::FromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kNotFound);
}

// Truncations and random byte changes of a real file: an error or a working
// tokenizer, never a crash.
TEST(HfTokenizerErrorsTest, CorruptedRealFilesNeverCrash) {
  for (const std::string& name : kvserve::testing::kTokenizerFixtures) {
    const std::string json =
        kvserve::testing::ReadFile(kvserve::testing::TokenizerFixtureDir(name) + "/tokenizer.json");
    for (size_t cut = 0; cut < json.size(); cut += json.size() / 97 + 1) {
      EXPECT_FALSE(HfTokenizer::FromJson(json.substr(0, cut)).ok()) << cut;
    }
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
      std::string mutated = json;
      for (int k = 0; k < 3; ++k) {
        mutated[rng() % mutated.size()] = "\"{}[],:0a\\ \xff"[rng() % 13];
      }
      auto tokenizer = HfTokenizer::FromJson(mutated);
      if (!tokenizer.ok()) {
        EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      (void)(*tokenizer)->Encode("Hello, world! 中文 <s>", true);
      (void)(*tokenizer)->Decode({0, 1, 2, 100, 300}, false);
    }
  }
}

}  // namespace
}  // namespace kvserve
