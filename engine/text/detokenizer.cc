#include "engine/text/detokenizer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "engine/text/utf8.h"

namespace kvserve {

std::string IncrementalDetokenizer::DecodeRange(size_t begin, size_t end) const {
  return tokenizer_.Decode(absl::MakeConstSpan(ids_).subspan(begin, end - begin),
                           /*skip_special_tokens=*/true);
}

std::string IncrementalDetokenizer::Append(int32_t id) {
  ids_.push_back(id);
  if (tokenizer_.DecodeMayChange(absl::MakeConstSpan(ids_).subspan(prefix_offset_),
                                 /*skip_special_tokens=*/true)) {
    return "";  // e.g. an open run of byte-fallback tokens: later ids may rewrite it
  }
  const std::string prefix_text = DecodeRange(prefix_offset_, read_offset_);
  const std::string new_text = DecodeRange(prefix_offset_, ids_.size());
  if (new_text.size() <= prefix_text.size() || EndsWithReplacementChar(new_text) ||
      !absl::StartsWith(new_text, prefix_text)) {
    return "";  // incomplete character, or nothing visible yet: wait for more ids
  }
  std::string delta = new_text.substr(prefix_text.size());
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  emitted_ += delta;
  return delta;
}

std::string IncrementalDetokenizer::Finish() {
  const std::string full = DecodeRange(0, ids_.size());
  if (!absl::StartsWith(full, emitted_)) return "";  // cannot take back sent text
  std::string rest = full.substr(emitted_.size());
  emitted_ = full;
  prefix_offset_ = read_offset_ = ids_.size();
  return rest;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopStringMatcher::Feed(absl::string_view text) {
  if (stopped_) return "";
  held_.append(text.data(), text.size());
  if (stops_.empty()) return std::exchange(held_, std::string());
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t k = std::min(held_.size(), stop.size() - 1); k > keep; --k) {
      if (absl::string_view(held_).substr(held_.size() - k) == absl::string_view(stop).substr(0, k)) {
        keep = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringMatcher::Flush() {
  if (stopped_) return "";
  return std::exchange(held_, std::string());
}

}  // namespace kvserve
