#include "engine/text/hf/added_vocabulary.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/text/hf/byte_level.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/pattern.h"

namespace kvserve::hf {
namespace {

// Unicode White_Space (what Rust's regex \s matches).
bool IsWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Rust's regex \w: alphabetic, marks, decimal digits, connector punctuation, joiners.
bool IsWordChar(absl::string_view one_char) {
  static const Pattern* word =
      Pattern::Regex("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]").value().release();
  return !word->FindAll(one_char).empty();
}

// Byte offset of the last character of `text` (non-empty, valid UTF-8).
size_t LastCharStart(absl::string_view text) {
  size_t i = text.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  return i;
}

bool EndsWithWord(absl::string_view text) {
  return !text.empty() && IsWordChar(text.substr(LastCharStart(text)));
}

bool StartsWithWord(absl::string_view text) {
  if (text.empty()) return false;
  return IsWordChar(text.substr(0, Utf8CharLength(static_cast<unsigned char>(text[0]))));
}

}  // namespace

void AddedVocabulary::Matcher::Build() {
  for (auto& list : by_first_byte) list.clear();
  for (size_t i = 0; i < patterns.size(); ++i) {
    by_first_byte[static_cast<unsigned char>(patterns[i].first[0])].push_back(i);
  }
  for (auto& list : by_first_byte) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return patterns[a].first.size() > patterns[b].first.size();
    });
  }
}

void AddedVocabulary::Add(const AddedToken& token, const BpeModel& model) {
  if (ids_.contains(token.content)) {  // only then can the very same token be there already
    for (const auto& [id, existing] : by_id_) {
      if (existing == token) return;
    }
  }
  int32_t id;
  if (const auto it = ids_.find(token.content); it != ids_.end()) {
    id = it->second;
  } else if (const auto model_id = model.TokenToId(token.content)) {
    id = *model_id;
  } else if (ids_.empty()) {
    id = model.size();
  } else {
    int32_t max = 0;
    for (const auto& [content, existing] : ids_) max = std::max(max, existing);
    id = (max >= model.size() || model.size() == 0) ? max + 1 : model.size();
  }
  ids_[token.content] = id;
  by_id_[id] = token;
  id_limit_ = std::max(id_limit_, id + 1);
  if (!special_set_.contains(token.content)) plain_tokens_.push_back(token);
}

absl::StatusOr<std::unique_ptr<AddedVocabulary>> AddedVocabulary::Parse(
    const Json* value, const BpeModel& model, const Normalizer* normalizer) {
  std::unique_ptr<AddedVocabulary> vocab(new AddedVocabulary());
  std::vector<AddedToken> tokens;
  if (value != nullptr && !value->is_null()) {
    if (!value->is_array()) return FieldError("added_tokens", "must be an array");
    for (size_t i = 0; i < value->size(); ++i) {
      const Json& item = (*value)[i];
      const std::string path = absl::StrCat("added_tokens[", i, "]");
      AddedToken token;
      ASSIGN_OR_RETURN(token.content, StringField(item, "content", path));
      if (const Json* id = FindField(item, "id")) {
        RETURN_IF_ERROR(TokenId(*id, JoinPath(path, "id")).status());
      }
      ASSIGN_OR_RETURN(token.single_word, BoolField(item, "single_word", path, false));
      ASSIGN_OR_RETURN(token.lstrip, BoolField(item, "lstrip", path, false));
      ASSIGN_OR_RETURN(token.rstrip, BoolField(item, "rstrip", path, false));
      ASSIGN_OR_RETURN(token.special, BoolField(item, "special", path, false));
      ASSIGN_OR_RETURN(token.normalized, BoolField(item, "normalized", path, !token.special));
      if (!token.content.empty()) tokens.push_back(std::move(token));
    }
  }
  for (const AddedToken& token : tokens) {
    if (token.special && vocab->special_set_.insert(token.content).second) {
      vocab->special_tokens_.push_back(token);
    }
  }
  for (const AddedToken& token : tokens) vocab->Add(token, model);

  for (const auto* list : {&vocab->special_tokens_, &vocab->plain_tokens_}) {
    for (const AddedToken& token : *list) {
      const int32_t id = vocab->ids_.at(token.content);
      if (!token.normalized) {
        vocab->strings_[id] = token.content;
        vocab->original_.patterns.emplace_back(token.content, id);
        continue;
      }
      std::string normalized = token.content;
      if (normalizer != nullptr) normalizer->Normalize(normalized);
      vocab->strings_[id] = normalized;
      if (!normalized.empty()) vocab->normalized_.patterns.emplace_back(normalized, id);
    }
  }
  vocab->original_.Build();
  vocab->normalized_.Build();
  return vocab;
}

std::vector<Piece> AddedVocabulary::SplitOne(const Piece& piece, const Matcher& matcher) const {
  const absl::string_view text = piece.text;
  std::vector<Piece> out;
  const auto emit = [&](size_t begin, size_t end, int32_t id) {
    Piece part;
    part.text = std::string(text.substr(begin, end - begin));
    part.at_input_start = piece.at_input_start && begin == 0;
    part.added_id = id;
    out.push_back(std::move(part));
  };
  size_t done = 0;  // text before this is emitted
  size_t search = 0;
  while (search < text.size()) {
    // Leftmost match, longest there.
    size_t start = text.size(), length = 0;
    int32_t id = -1;
    for (size_t pos = search; pos < text.size() && id < 0; ++pos) {
      for (size_t index : matcher.by_first_byte[static_cast<unsigned char>(text[pos])]) {
        const auto& [pattern, pattern_id] = matcher.patterns[index];
        if (text.substr(pos, pattern.size()) == pattern) {
          start = pos;
          length = pattern.size();
          id = pattern_id;
          break;
        }
      }
    }
    if (id < 0) break;
    size_t stop = start + length;
    search = stop;
    const AddedToken& token = by_id_.at(id);
    if (token.single_word &&
        (EndsWithWord(text.substr(0, start)) || StartsWithWord(text.substr(stop)))) {
      continue;  // inside a word
    }
    if (token.lstrip) {
      size_t left = start;
      while (left > done) {
        const size_t prev = LastCharStart(text.substr(0, left));
        size_t pos = prev;
        if (!IsWhiteSpace(NextCodePoint(text, &pos))) break;
        left = prev;
      }
      start = left;
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t pos = stop;
        if (!IsWhiteSpace(NextCodePoint(text, &pos))) break;
        stop = pos;
      }
    }
    // As Hugging Face does, the search goes on from the match's end even when
    // rstrip took the whitespace after it.
    if (done < start) emit(done, start, -1);
    emit(start, stop, id);
    done = stop;
  }
  if (done < text.size()) emit(done, text.size(), -1);
  return out;
}

void AddedVocabulary::SplitOriginal(std::vector<Piece>& pieces) const {
  if (original_.patterns.empty()) return;
  SplitEach(pieces, [&](const Piece& piece) { return SplitOne(piece, original_); });
}

void AddedVocabulary::NormalizeAndSplit(std::vector<Piece>& pieces,
                                        const Normalizer* normalizer) const {
  SplitEach(pieces, [&](const Piece& piece) {
    Piece normalized = piece;
    if (normalizer != nullptr) normalizer->Normalize(normalized.text);
    if (normalized_.patterns.empty()) return std::vector<Piece>{std::move(normalized)};
    return SplitOne(normalized, normalized_);
  });
}

const std::string* AddedVocabulary::IdToString(int32_t id) const {
  const auto it = strings_.find(id);
  return it == strings_.end() ? nullptr : &it->second;
}

}  // namespace kvserve::hf
