#include "tools/synthetic_tokenizer.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace kvserve {

const char kLlama3SplitRegex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kQwen2SplitRegex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

namespace {

using Json = nlohmann::ordered_json;

// Text the merges are learned from: prose, numbers and code, written for this file.
constexpr char kCorpus[] =
    "The server streams tokens to every client as soon as the model produces them. "
    "A request waits in the queue until the scheduler finds room for it in the cache, "
    "then its prompt is processed in chunks and its answer is decoded one token at a time. "
    "When memory runs short, the most recent request is paused and its work is recomputed later. "
    "Clients in any language can call the service, cancel a call, or set a deadline for it. "
    "In the morning the team measured the latency of the first token and the throughput of "
    "the whole system, and they wrote the numbers into the report with the command that made them. "
    "There were 128 requests, 32 of them at once, and each one asked for 256 new tokens. "
    "for (int i = 0; i < n; ++i) { total += values[i] * weights[i]; } return total; "
    "def generate(prompt, max_tokens=64):\n    tokens = tokenize(prompt)\n    return model(tokens)\n"
    "import json\nwith open(\"config.json\") as f:\n    config = json.load(f)\n"
    "The quick brown fox jumps over the lazy dog while the other animals are watching. "
    "Numbers like 3.14159, 2.71828 and 1.41421 appear in many formulas of physics and mathematics. "
    "She said that they would come back tomorrow, but nobody knew when they would arrive. "
    "Attention is computed from queries, keys and values; the keys and values of past tokens "
    "are kept so that the next token does not recompute them.";

// GPT-2's reversible byte → printable character map: printable Latin-1 bytes
// map to themselves, the others to U+0100 upwards, in byte order.
std::vector<std::string> ByteLevelAlphabet() {
  std::vector<std::string> out(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const int code = printable ? b : next++;
    std::string utf8;
    if (code < 0x80) {
      utf8 += static_cast<char>(code);
    } else {
      utf8 += static_cast<char>(0xC0 | (code >> 6));
      utf8 += static_cast<char>(0x80 | (code & 0x3F));
    }
    out[b] = utf8;
  }
  return out;
}

// Splits UTF-8 text into characters.
std::vector<std::string> Chars(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

class VocabBuilder {
 public:
  bool Has(const std::string& token) const { return ids_.count(token) > 0; }
  void Add(const std::string& token) {
    if (Has(token)) return;
    ids_[token] = static_cast<int>(order_.size());
    order_.push_back(token);
  }
  int size() const { return static_cast<int>(order_.size()); }
  const std::vector<std::string>& tokens() const { return order_; }
  int Id(const std::string& token) const { return ids_.at(token); }

 private:
  std::map<std::string, int> ids_;
  std::vector<std::string> order_;
};

// Learns up to `max_merges` merges from the corpus words (each a sequence of
// base symbols), most frequent pair first, adding each result to the vocab.
void LearnMerges(std::vector<std::vector<std::string>> words, int max_merges, VocabBuilder& vocab,
                 std::vector<std::pair<std::string, std::string>>& merges) {
  for (int m = 0; m < max_merges; ++m) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words) {
      for (size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
    }
    if (counts.empty()) return;
    auto best = std::max_element(counts.begin(), counts.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best->second < 2) return;
    const auto pair = best->first;
    const std::string merged = pair.first + pair.second;
    if (vocab.Has(merged)) return;
    vocab.Add(merged);
    merges.push_back(pair);
    for (auto& w : words) {
      std::vector<std::string> next;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == pair.first && w[i + 1] == pair.second) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(w[i]);
        }
      }
      w = std::move(next);
    }
  }
}

// Fills the vocab to `target` with merges of random short tokens.
void FillRandomMerges(int target, int first_mergeable, uint64_t seed, VocabBuilder& vocab,
                      std::vector<std::pair<std::string, std::string>>& merges) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> pool;
  for (int i = first_mergeable; i < vocab.size(); ++i) {
    if (vocab.tokens()[i].size() <= 12) pool.push_back(vocab.tokens()[i]);
  }
  while (vocab.size() < target && !pool.empty()) {
    const std::string& a = pool[rng() % pool.size()];
    const std::string& b = pool[rng() % pool.size()];
    const std::string merged = a + b;
    if (vocab.Has(merged)) continue;
    vocab.Add(merged);
    merges.emplace_back(a, b);
    if (merged.size() <= 12) pool.push_back(merged);
  }
}

Json AddedToken(int id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

Json BosTemplate(const std::string& bos, int bos_id) {
  auto special = [&] { return Json{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}; };
  auto seq = [](const char* id) { return Json{{"Sequence", {{"id", id}, {"type_id", 0}}}}; };
  return {{"type", "TemplateProcessing"},
          {"single", {special(), seq("A")}},
          {"pair", {special(), seq("A"), special(), seq("B")}},
          {"special_tokens", {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}}}};
}

Json BpeModel(const VocabBuilder& vocab, int count,
              const std::vector<std::pair<std::string, std::string>>& merges, bool byte_fallback) {
  Json v = Json::object();
  for (int i = 0; i < count; ++i) v[vocab.tokens()[i]] = i;
  Json m = Json::array();
  for (const auto& [a, b] : merges) m.push_back({a, b});
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", byte_fallback ? Json("<unk>") : Json(nullptr)},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", byte_fallback},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", !byte_fallback},
          {"vocab", v},
          {"merges", m}};
}

Json Header() {
  return {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}};
}

absl::StatusOr<std::string> ByteLevelJson(const SyntheticTokenizerSpec& spec) {
  const int regular = spec.vocab_size - static_cast<int>(spec.special_tokens.size());
  if (spec.special_tokens.empty()) return absl::InvalidArgumentError("byte-level tokenizer needs a BOS special token");
  if (regular < 256) return absl::InvalidArgumentError("vocab_size too small for 256 byte tokens");
  const std::vector<std::string> alphabet = ByteLevelAlphabet();
  VocabBuilder vocab;
  for (const std::string& c : alphabet) vocab.Add(c);
  std::vector<std::vector<std::string>> words;
  bool first = true;
  for (absl::string_view word : absl::StrSplit(kCorpus, ' ', absl::SkipEmpty())) {
    std::vector<std::string> symbols;
    if (!first) symbols.push_back(alphabet[' ']);
    first = false;
    for (unsigned char c : word) symbols.push_back(alphabet[c]);
    words.push_back(symbols);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  LearnMerges(words, std::min(regular - 256, 1500), vocab, merges);
  FillRandomMerges(regular, 0, spec.seed, vocab, merges);
  if (vocab.size() < regular) return absl::InternalError("could not fill the vocabulary");
  Json j = Header();
  Json added = Json::array();
  for (size_t i = 0; i < spec.special_tokens.size(); ++i) {
    added.push_back(AddedToken(regular + static_cast<int>(i), spec.special_tokens[i]));
  }
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", spec.split_regex.empty() ? kLlama3SplitRegex : spec.split_regex}}},
         {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  j["post_processor"] = spec.add_bos ? BosTemplate(spec.special_tokens[0], regular)
                                     : Json{{"type", "ByteLevel"}, {"add_prefix_space", false},
                                            {"trim_offsets", false}, {"use_regex", false}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = BpeModel(vocab, regular, merges, /*byte_fallback=*/false);
  // Byte-level vocabularies hold the special tokens too.
  for (size_t i = 0; i < spec.special_tokens.size(); ++i) {
    j["model"]["vocab"][spec.special_tokens[i]] = regular + static_cast<int>(i);
  }
  return j.dump();
}

absl::StatusOr<std::string> SentencePieceJson(const SyntheticTokenizerSpec& spec, bool bytes_only) {
  if (spec.vocab_size < 259) return absl::InvalidArgumentError("vocab_size too small for <unk> <s> </s> and 256 bytes");
  VocabBuilder vocab;
  for (const char* s : {"<unk>", "<s>", "</s>"}) vocab.Add(s);
  for (int b = 0; b < 256; ++b) vocab.Add(absl::StrFormat("<0x%02X>", b));
  std::vector<std::pair<std::string, std::string>> merges;
  Json j = Header();
  Json added = Json::array();
  for (int i = 0; i < 3; ++i) added.push_back(AddedToken(i, vocab.tokens()[i]));
  if (bytes_only) {
    // Ids past the bytes are unused: special, so that decoding skips them.
    for (int i = vocab.size(); i < spec.vocab_size; ++i) {
      const std::string name = absl::StrCat("<unused_", i, ">");
      vocab.Add(name);
      added.push_back(AddedToken(i, name));
    }
    j["added_tokens"] = added;
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = BosTemplate("<s>", 1);
    j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}};
    j["model"] = BpeModel(vocab, vocab.size(), merges, /*byte_fallback=*/true);
    return j.dump();
  }
  const std::string space = "\xE2\x96\x81";  // ▁
  std::vector<std::vector<std::string>> words;
  for (absl::string_view word : absl::StrSplit(kCorpus, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    std::vector<std::string> symbols = {space};
    for (const std::string& c : Chars(std::string(word))) symbols.push_back(c);
    words.push_back(symbols);
  }
  const int first_piece = vocab.size();
  for (const auto& w : words) {
    for (const std::string& c : w) {
      if (vocab.size() < spec.vocab_size) vocab.Add(c);
    }
  }
  LearnMerges(words, std::min(spec.vocab_size - vocab.size(), 1500), vocab, merges);
  FillRandomMerges(spec.vocab_size, first_piece, spec.seed, vocab, merges);
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", space}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}}}}};
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = BosTemplate("<s>", 1);
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["model"] = BpeModel(vocab, vocab.size(), merges, /*byte_fallback=*/true);
  return j.dump();
}

}  // namespace

absl::StatusOr<std::string> MakeTokenizerJson(const SyntheticTokenizerSpec& spec) {
  switch (spec.style) {
    case TokenizerStyle::kByteLevel: return ByteLevelJson(spec);
    case TokenizerStyle::kSentencePiece: return SentencePieceJson(spec, /*bytes_only=*/false);
    case TokenizerStyle::kBytes: return SentencePieceJson(spec, /*bytes_only=*/true);
  }
  return absl::InvalidArgumentError("unknown tokenizer style");
}

}  // namespace kvserve
