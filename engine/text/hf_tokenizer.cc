#include "engine/text/hf_tokenizer.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/utf8.h"

namespace kvserve {

using hf::Json;

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream buffer;
  buffer << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tokenizer = FromJson(buffer.str());
  if (!tokenizer.ok()) {
    // "<path>: <field>: ..." rather than "<path>: tokenizer.json: <field>: ...".
    absl::string_view message = tokenizer.status().message();
    absl::ConsumePrefix(&message, "tokenizer.json: ");
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromJson(absl::string_view json) {
  const Json root = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return hf::FieldError("(file)", "is not valid JSON");
  if (!root.is_object()) return hf::FieldError("(file)", "must be a JSON object");
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  const Json null_value;
  const auto member = [&](absl::string_view key) -> const Json& {
    const Json* value = hf::FindField(root, key);
    return value == nullptr ? null_value : *value;
  };
  ASSIGN_OR_RETURN(t->normalizer_, hf::ParseNormalizer(member("normalizer"), "normalizer"));
  ASSIGN_OR_RETURN(t->pre_tokenizer_,
                   hf::ParsePreTokenizer(member("pre_tokenizer"), "pre_tokenizer"));
  ASSIGN_OR_RETURN(const Json* model, hf::RequiredField(root, "model", ""));
  ASSIGN_OR_RETURN(t->model_, hf::BpeModel::Parse(*model, "model"));
  ASSIGN_OR_RETURN(t->added_, hf::AddedVocabulary::Parse(hf::FindField(root, "added_tokens"),
                                                         *t->model_, t->normalizer_.get()));
  ASSIGN_OR_RETURN(t->post_processor_,
                   hf::ParsePostProcessor(member("post_processor"), "post_processor"));
  ASSIGN_OR_RETURN(t->decoder_, hf::ParseDecoder(member("decoder"), "decoder"));
  t->description_ = absl::StrCat("Hugging Face tokenizer.json (BPE, ", t->model_->size(),
                                 " tokens + ", t->added_->size(), " added)");
  return t;
}

absl::StatusOr<std::vector<int32_t>> HfTokenizer::Encode(absl::string_view text,
                                                         bool add_special_tokens) const {
  if (SanitizeUtf8(text) != text) return absl::InvalidArgumentError("text is not valid UTF-8");
  std::vector<hf::Piece> pieces;
  if (!text.empty()) {
    hf::Piece whole;
    whole.text = std::string(text);
    whole.at_input_start = true;
    pieces.push_back(std::move(whole));
  }
  added_->SplitOriginal(pieces);
  added_->NormalizeAndSplit(pieces, normalizer_.get());
  if (pre_tokenizer_ != nullptr) pre_tokenizer_->PreTokenize(pieces);
  std::vector<int32_t> ids;
  for (const hf::Piece& piece : pieces) {
    if (piece.is_token()) {
      ids.push_back(piece.added_id);
    } else {
      model_->Tokenize(piece.text, &ids);
    }
  }
  if (add_special_tokens && post_processor_ != nullptr) {
    ids = post_processor_->Process(std::move(ids));
  }
  return ids;
}

const std::string* HfTokenizer::IdToToken(int32_t id) const {
  if (const std::string* content = added_->IdToString(id)) return content;
  return model_->IdToToken(id);
}

std::string HfTokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  return SanitizeUtf8(DecodeRaw(ids, skip_special_tokens));
}

std::string HfTokenizer::DecodeRaw(absl::Span<const int32_t> ids,
                                   bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* token = IdToToken(id);
    if (token == nullptr) continue;  // unknown ids decode to nothing, as in Hugging Face
    if (skip_special_tokens && added_->IsSpecial(*token)) continue;
    tokens.push_back(*token);
  }
  if (decoder_ == nullptr) return absl::StrJoin(tokens, " ");
  std::string text;
  for (const std::string& part : decoder_->DecodeChain(std::move(tokens))) text += part;
  return text;
}

bool HfTokenizer::DecodeMayChange(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  if (decoder_ == nullptr || !decoder_->JoinsByteRuns()) return false;
  // The last token the decoder would see: is it part of a byte run?
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    const std::string* token = IdToToken(*it);
    if (token == nullptr || (skip_special_tokens && added_->IsSpecial(*token))) continue;
    return hf::ByteFallbackByte(*token).has_value();
  }
  return false;
}

int HfTokenizer::vocab_size() const { return std::max(model_->id_limit(), added_->id_limit()); }

std::string HfTokenizer::Describe() const { return description_; }

}  // namespace kvserve
