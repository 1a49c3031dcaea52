#include "engine/text/hf/bpe_model.h"

#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/piece.h"

namespace kvserve::hf {

absl::Status BpeModel::AddMerge(const std::string& left, const std::string& right, int32_t rank,
                                absl::string_view path) {
  const auto l = vocab_.find(left), r = vocab_.find(right);
  if (l == vocab_.end() || r == vocab_.end()) {
    return FieldError(path, absl::StrCat("merge of \"", left, "\" and \"", right,
                                         "\" uses a token that is not in model.vocab"));
  }
  const size_t prefix = continuing_subword_prefix_.size();
  const std::string merged = left + (right.size() >= prefix ? right.substr(prefix) : "");
  const auto m = vocab_.find(merged);
  if (m == vocab_.end()) {
    return FieldError(path, absl::StrCat("merged token \"", merged, "\" is not in model.vocab"));
  }
  merges_.insert_or_assign(PairKey(l->second, r->second), MergeResult{rank, m->second});
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Parse(const Json& value,
                                                          absl::string_view path) {
  if (!value.is_object()) return FieldError(path, "must be an object");
  const Json* type = FindField(value, "type");
  if (type != nullptr && !(type->is_string() && type->get<std::string>() == "BPE")) {
    return FieldError(JoinPath(path, "type"),
                      absl::StrCat("unsupported model type ", type->dump(), " (supported: BPE)"));
  }
  if (type == nullptr && FindField(value, "merges") == nullptr) {
    return FieldError(JoinPath(path, "type"), "is missing (and there are no merges: not BPE)");
  }
  const Json* dropout = FindField(value, "dropout");
  if (dropout != nullptr && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return FieldError(JoinPath(path, "dropout"), "BPE dropout is not supported (must be null)");
  }
  std::unique_ptr<BpeModel> model(new BpeModel());
  ASSIGN_OR_RETURN(model->fuse_unk_, BoolField(value, "fuse_unk", path, false));
  ASSIGN_OR_RETURN(model->byte_fallback_, BoolField(value, "byte_fallback", path, false));
  ASSIGN_OR_RETURN(model->ignore_merges_, BoolField(value, "ignore_merges", path, false));
  ASSIGN_OR_RETURN(model->continuing_subword_prefix_,
                   OptionalStringField(value, "continuing_subword_prefix", path, ""));
  ASSIGN_OR_RETURN(model->end_of_word_suffix_,
                   OptionalStringField(value, "end_of_word_suffix", path, ""));

  const std::string vocab_path = JoinPath(path, "vocab");
  ASSIGN_OR_RETURN(const Json* vocab, RequiredField(value, "vocab", path));
  if (!vocab->is_object()) return FieldError(vocab_path, "must be an object of token: id");
  int32_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    const std::string item_path = absl::StrCat(vocab_path, "[\"", it.key(), "\"]");
    ASSIGN_OR_RETURN(const int32_t id, TokenId(it.value(), item_path));
    if (id >= kMaxId) return FieldError(item_path, absl::StrCat("id ", id, " is too large"));
    model->vocab_.emplace(it.key(), id);
    max_id = std::max(max_id, id);
  }
  model->id_to_token_.assign(static_cast<size_t>(max_id) + 1, nullptr);
  for (const auto& [token, id] : model->vocab_) {
    if (model->id_to_token_[id] != nullptr) {
      return FieldError(vocab_path, absl::StrCat("id ", id, " is used by both \"",
                                                 *model->id_to_token_[id], "\" and \"", token,
                                                 "\""));
    }
    model->id_to_token_[id] = &token;
  }

  ASSIGN_OR_RETURN(const std::string unk, OptionalStringField(value, "unk_token", path, ""));
  if (!unk.empty()) {
    const auto it = model->vocab_.find(unk);
    if (it == model->vocab_.end()) {
      return FieldError(JoinPath(path, "unk_token"),
                        absl::StrCat("\"", unk, "\" is not in model.vocab"));
    }
    model->unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    model->byte_ids_[b] = model->TokenToId(absl::StrFormat("<0x%02X>", b));
  }

  const std::string merges_path = JoinPath(path, "merges");
  const Json* merges = FindField(value, "merges");
  if (merges != nullptr && !merges->is_null()) {
    if (!merges->is_array()) return FieldError(merges_path, "must be an array");
    for (size_t i = 0; i < merges->size(); ++i) {
      const Json& merge = (*merges)[i];
      const std::string item_path = absl::StrCat(merges_path, "[", i, "]");
      std::string left, right;
      if (merge.is_string()) {  // "left right", exactly one space
        const std::string& text = merge.get_ref<const std::string&>();
        const size_t space = text.find(' ');
        if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
          return FieldError(item_path, "must be two tokens separated by one space");
        }
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        return FieldError(item_path, "must be \"left right\" or [\"left\", \"right\"]");
      }
      RETURN_IF_ERROR(model->AddMerge(left, right, static_cast<int32_t>(i), item_path));
    }
  }
  return model;
}

std::optional<int32_t> BpeModel::TokenToId(absl::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= id_limit()) return nullptr;
  return id_to_token_[id];
}

std::vector<std::pair<int32_t, size_t>> BpeModel::InitialSymbols(absl::string_view word) const {
  std::vector<std::pair<int32_t, size_t>> symbols;  // (id, byte length in the word)
  std::optional<std::pair<int32_t, size_t>> unk;     // pending unknown run
  for (size_t i = 0; i < word.size();) {
    const size_t length = std::min(Utf8CharLength(static_cast<unsigned char>(word[i])),
                                   word.size() - i);
    std::string piece(word.substr(i, length));
    if (i > 0) piece.insert(0, continuing_subword_prefix_);
    if (i + length == word.size()) piece += end_of_word_suffix_;
    i += length;
    if (const auto id = TokenToId(piece)) {
      if (unk) symbols.push_back(*std::exchange(unk, std::nullopt));
      symbols.emplace_back(*id, length);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_ids_[b].has_value();
      if (all) {
        // As Hugging Face does, a pending unknown run is not flushed first.
        for (unsigned char b : piece) symbols.emplace_back(*byte_ids_[b], 1);
        continue;
      }
    }
    if (!unk_id_) continue;  // no unknown token: the character is dropped
    if (unk && fuse_unk_) {
      unk->second += length;
    } else {
      if (unk) symbols.push_back(*unk);
      unk = std::make_pair(*unk_id_, length);
    }
  }
  if (unk) symbols.push_back(*unk);
  return symbols;
}

std::vector<int32_t> BpeModel::MergeWord(absl::string_view word) const {
  struct Symbol {
    int32_t id;
    int prev, next;  // -1: none
    bool removed;
  };
  std::vector<Symbol> symbols;
  for (const auto& [id, length] : InitialSymbols(word)) {
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false});
  }
  if (!symbols.empty()) symbols.back().next = -1;

  // Candidate merges, best (lowest) rank first, then leftmost.
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  const auto push_pair = [&](int pos) {
    if (pos < 0 || symbols[pos].next < 0) return;
    const auto it = merges_.find(PairKey(symbols[pos].id, symbols[symbols[pos].next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int pos = 0; pos + 1 < static_cast<int>(symbols.size()); ++pos) push_pair(pos);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Stale entry: the pair at this position changed since it was queued.
    const auto it = merges_.find(PairKey(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    push_pair(left.prev);
    push_pair(top.pos);
  }
  std::vector<int32_t> ids;
  for (const Symbol& s : symbols) {
    if (!s.removed) ids.push_back(s.id);
  }
  return ids;
}

void BpeModel::Tokenize(absl::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = TokenToId(word)) {
      ids->push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = MergeWord(word);
  ids->insert(ids->end(), merged.begin(), merged.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::move(merged));
  }
}

}  // namespace kvserve::hf
