#include "engine/loading/gguf_tokenizer.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace kvserve {
namespace {

using Json = nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int64_t kTypeUnknown = 2;
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUserDefined = 4;

// The pre-tokenizer regexes of the models' tokenizer.json files.
constexpr char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json ByteLevel(bool use_regex, bool add_prefix_space) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", true},
          {"use_regex", use_regex}};
}

Json SplitIsolated(const char* regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"},
          {"invert", false}};
}

// What tokenizer.json a byte-level model with this llama.cpp pre-tokenizer
// name ships: its normalizer, pre-tokenizer and BPE ignore_merges.
struct Gpt2Shape {
  Json normalizer;
  Json pre_tokenizer;
  bool ignore_merges = false;
};

// `prefix`: tokenizer.ggml.add_space_prefix, ByteLevel's add_prefix_space.
absl::StatusOr<Gpt2Shape> Gpt2ShapeFor(const std::string& pre, bool prefix) {
  Gpt2Shape s;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    // Meta-Llama-3's tokenizer.json.
    s.pre_tokenizer = {{"type", "Sequence"},
                       {"pretokenizers", {SplitIsolated(kLlama3Regex), ByteLevel(false, prefix)}}};
    s.ignore_merges = true;
  } else if (pre == "qwen2") {
    // Qwen2 / Qwen2.5's tokenizer.json: NFC, then the Qwen2 split (single digits).
    s.normalizer = {{"type", "NFC"}};
    s.pre_tokenizer = {{"type", "Sequence"},
                       {"pretokenizers", {SplitIsolated(kQwen2Regex), ByteLevel(false, prefix)}}};
  } else if (pre == "smollm" || pre == "starcoder") {
    // SmolLM / StarCoder: every digit on its own, then GPT-2's byte-level split.
    s.pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         {Json{{"type", "Digits"}, {"individual_digits", true}}, ByteLevel(true, prefix)}}};
  } else if (pre == "gpt-2" || pre == "gpt2" || pre == "default") {
    // GPT-2's tokenizer.json: ByteLevel with its built-in regex.
    s.pre_tokenizer = ByteLevel(true, prefix);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokenizer.ggml.pre \"", pre,
        "\" is not supported (supported: llama-bpe, qwen2, smollm, starcoder, gpt-2, default)"));
  }
  return s;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// transformers' generate_merges(vocab, vocab_scores), which its
// SentencePieceExtractor uses: every split of a piece into two pieces of the
// vocabulary is a merge (halves ordered by their ids); then all merges are
// sorted by (merged piece's score, left length, right length), highest first,
// stable. Splits and lengths are in code points, as Python's str counts.
Json MergesFromScores(const std::vector<std::string>& tokens, const std::vector<double>& scores,
                      const std::unordered_map<std::string, int64_t>& vocab) {
  struct Merge {
    double score;
    size_t left_len, right_len;
    std::string left, right;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& piece = tokens[id];
    std::vector<std::pair<std::pair<int64_t, int64_t>, size_t>> local;  // (ids, cut)
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if ((static_cast<unsigned char>(piece[cut]) & 0xC0) == 0x80) continue;  // mid code point
      auto l = vocab.find(piece.substr(0, cut));
      if (l == vocab.end()) continue;
      auto r = vocab.find(piece.substr(cut));
      if (r != vocab.end()) local.push_back({{l->second, r->second}, cut});
    }
    std::stable_sort(local.begin(), local.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ids, cut] : local) {
      std::string left = piece.substr(0, cut), right = piece.substr(cut);
      const size_t ll = CodePoints(left), rl = CodePoints(right);
      merges.push_back({scores[id], ll, rl, std::move(left), std::move(right)});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tie(a.score, a.left_len, a.right_len) > std::tie(b.score, b.left_len, b.right_len);
  });
  Json out = Json::array();
  for (const Merge& m : merges) out.push_back(Json::array({m.left, m.right}));
  return out;
}

Json AddedToken(int64_t id, const std::string& content, bool special) {
  return {{"id", id},           {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},    {"normalized", false}, {"special", special}};
}

Json TemplateWith(const std::vector<std::pair<std::string, int64_t>>& before,
                  const std::vector<std::pair<std::string, int64_t>>& after) {
  Json single = Json::array();
  Json special = Json::object();
  auto add = [&](const std::pair<std::string, int64_t>& t) {
    single.push_back({{"SpecialToken", {{"id", t.first}, {"type_id", 0}}}});
    special[t.first] = {{"id", t.first}, {"ids", {t.second}}, {"tokens", {t.first}}};
  };
  for (const auto& t : before) add(t);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  for (const auto& t : after) add(t);
  return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", special}};
}

absl::StatusOr<std::optional<int64_t>> OptionalId(const GgufMetadata& md, const std::string& key,
                                                  size_t vocab) {
  if (!md.Has(key)) return std::nullopt;
  ASSIGN_OR_RETURN(uint64_t id, md.GetUint(key));
  if (id >= vocab) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF metadata \"", key, "\" is ", id, ", not below the vocabulary size ", vocab));
  }
  return static_cast<int64_t>(id);
}

absl::StatusOr<bool> OptionalBool(const GgufMetadata& md, const std::string& key, bool dflt) {
  if (!md.Has(key)) return dflt;
  return md.GetBool(key);
}

}  // namespace

absl::StatusOr<Json> GgufTokenizerJson(const GgufMetadata& md) {
  ASSIGN_OR_RETURN(const std::string model, md.GetString("tokenizer.ggml.model"));
  if (model != "gpt2" && model != "llama") {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokenizer.ggml.model \"", model, "\" is not supported (supported: gpt2, llama)"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> tokens, md.GetStringArray("tokenizer.ggml.tokens"));
  if (tokens.empty()) return absl::InvalidArgumentError("tokenizer.ggml.tokens is empty");
  std::vector<int64_t> types(tokens.size(), 1);
  if (md.Has("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(types, md.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.token_type has ", types.size(),
                                                     " entries for ", tokens.size(), " tokens"));
    }
  }
  // The first occurrence of a repeated string keeps it, as llama.cpp's lookup does.
  std::unordered_map<std::string, int64_t> vocab;
  Json vocab_json = Json::object();
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (vocab.emplace(tokens[id], id).second) vocab_json[tokens[id]] = id;
  }
  Json added = Json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (types[id] == kTypeControl || types[id] == kTypeUnknown) {
      added.push_back(AddedToken(id, tokens[id], /*special=*/true));
    } else if (types[id] == kTypeUserDefined) {
      added.push_back(AddedToken(id, tokens[id], /*special=*/false));
    }
  }

  ASSIGN_OR_RETURN(const std::optional<int64_t> bos, OptionalId(md, "tokenizer.ggml.bos_token_id", tokens.size()));
  ASSIGN_OR_RETURN(const std::optional<int64_t> eos, OptionalId(md, "tokenizer.ggml.eos_token_id", tokens.size()));
  ASSIGN_OR_RETURN(const std::optional<int64_t> unk, OptionalId(md, "tokenizer.ggml.unknown_token_id", tokens.size()));

  Json j;
  j["version"] = "1.0";
  j["added_tokens"] = std::move(added);
  Json bpe = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}};
  Json merges = Json::array();
  if (md.Has("tokenizer.ggml.merges")) {
    ASSIGN_OR_RETURN(const std::vector<std::string> lines, md.GetStringArray("tokenizer.ggml.merges"));
    for (const std::string& line : lines) {
      const size_t space = line.find(' ', 1);
      if (space == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("tokenizer.ggml.merges entry \"", line, "\" is not \"left right\""));
      }
      merges.push_back(Json::array({line.substr(0, space), line.substr(space + 1)}));
    }
  }

  // add_bos_token: llama.cpp's defaults when the key is absent.
  bool add_bos_default = model == "llama";
  if (model == "gpt2") {
    ASSIGN_OR_RETURN(const std::string pre, md.GetString("tokenizer.ggml.pre"));
    ASSIGN_OR_RETURN(const bool prefix, OptionalBool(md, "tokenizer.ggml.add_space_prefix", false));
    ASSIGN_OR_RETURN(Gpt2Shape shape, Gpt2ShapeFor(pre, prefix));
    if (merges.empty()) return absl::InvalidArgumentError("gpt2 tokenizer without tokenizer.ggml.merges");
    add_bos_default = pre == "llama-bpe";
    j["normalizer"] = shape.normalizer;
    j["pre_tokenizer"] = shape.pre_tokenizer;
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                    {"use_regex", true}};
    bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = false;
    bpe["byte_fallback"] = false;
    bpe["ignore_merges"] = shape.ignore_merges;
  } else {
    ASSIGN_OR_RETURN(const std::vector<double> scores, md.GetFloatArray("tokenizer.ggml.scores"));
    if (scores.size() != tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.scores has ", scores.size(),
                                                     " entries for ", tokens.size(), " tokens"));
    }
    if (merges.empty()) merges = MergesFromScores(tokens, scores, vocab);
    ASSIGN_OR_RETURN(const bool prefix, OptionalBool(md, "tokenizer.ggml.add_space_prefix", true));
    // transformers' LlamaConverter (legacy form, as Llama 2 / Mistral ship it).
    Json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}};
    j["normalizer"] = prefix ? Json{{"type", "Sequence"},
                                    {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}}, replace}}}
                             : replace;
    j["pre_tokenizer"] = nullptr;
    Json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    bpe["unk_token"] = unk ? Json(tokens[*unk]) : Json(nullptr);
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
    bpe["ignore_merges"] = false;
  }
  bpe["vocab"] = std::move(vocab_json);
  bpe["merges"] = std::move(merges);
  j["model"] = std::move(bpe);

  ASSIGN_OR_RETURN(const bool add_bos, OptionalBool(md, "tokenizer.ggml.add_bos_token", add_bos_default));
  ASSIGN_OR_RETURN(const bool add_eos, OptionalBool(md, "tokenizer.ggml.add_eos_token", false));
  std::vector<std::pair<std::string, int64_t>> before, after;
  if (add_bos && bos) before.emplace_back(tokens[*bos], *bos);
  if (add_eos && eos) after.emplace_back(tokens[*eos], *eos);
  if (before.empty() && after.empty()) {
    j["post_processor"] = nullptr;
  } else {
    j["post_processor"] = TemplateWith(before, after);
  }
  return j;
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> GgufTokenizer(const GgufMetadata& md) {
  ASSIGN_OR_RETURN(const Json j, GgufTokenizerJson(md));
  return HfTokenizer::FromJson(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace kvserve
