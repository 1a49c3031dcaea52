// Streaming detokenization: turns generated ids into text deltas that
// concatenate to exactly Decode(all ids) and never end inside a character.
//
// Each step decodes a short window of recent ids twice, without and with the
// new id, and emits the difference once the text no longer ends in U+FFFD (an
// incomplete byte sequence). Decoding a window rather than single ids keeps
// context-dependent decoders right: SentencePiece's leading-space rule and
// byte-fallback tokens that only form a character together. Text the
// tokenizer says may still change (Tokenizer::DecodeMayChange: an open run
// of byte-fallback tokens) is held back until a later id settles it.
#pragma once

#include "absl/strings/string_view.h"
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"

namespace kvserve {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  /// Adds one id; returns the text that became final (possibly empty).
  std::string Append(int32_t id);
  /// At the end: the rest of Decode(all ids) not yet returned.
  std::string Finish();

 private:
  std::string DecodeRange(size_t begin, size_t end) const;

  const Tokenizer& tokenizer_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // window start: ids before it are settled
  size_t read_offset_ = 0;    // ids before it have been emitted as text
  std::string emitted_;
};

/// Holds back text that might be the start of a stop string, and cuts the
/// text at the first stop string found.
class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  /// Adds text; returns what can be sent now. After a match, stopped() is
  /// true and the returned text ends right before the stop string.
  std::string Feed(absl::string_view text);
  /// Releases the held-back text (no stop string came).
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace kvserve
