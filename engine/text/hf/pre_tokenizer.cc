#include "engine/text/hf/pre_tokenizer.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "engine/text/hf/byte_level.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/pattern.h"

namespace kvserve::hf {
namespace {

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->PreTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// Split on a pattern; also Digits (a \p{N} pattern).
class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<Pattern> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    SplitEach(pieces, [&](const Piece& piece) {
      return SplitPiece(piece, pattern_->FindAll(piece.text), behavior_, invert_);
    });
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<Pattern> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    SplitEach(pieces, [&](const Piece& piece) {
      Piece spaced = piece;
      if (add_prefix_space_ && !absl::StartsWith(spaced.text, " ")) {
        spaced.text = absl::StrCat(" ", spaced.text);
      }
      std::vector<Piece> parts;
      if (regex_ != nullptr) {
        parts = SplitPiece(spaced, regex_->FindAll(spaced.text), SplitBehavior::kIsolated,
                           /*invert=*/false);
      } else {
        parts.push_back(std::move(spaced));
      }
      for (Piece& part : parts) part.text = BytesToChars(part.text);
      return parts;
    });
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Pattern> regex_;  // null: no splitting
};

enum class PrependScheme { kFirst, kAlways, kNever };

// SentencePiece-style: spaces become the replacement character (▁), which may
// be prepended, and the text may be split before each ▁.
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {
    split_pattern_ = std::move(Pattern::Literal(replacement_).value());
  }
  void PreTokenize(std::vector<Piece>& pieces) const override {
    SplitEach(pieces, [&](const Piece& piece) {
      Piece replaced = piece;
      replaced.text = absl::StrReplaceAll(piece.text, {{" ", replacement_}});
      const bool prepend = scheme_ == PrependScheme::kAlways ||
                           (scheme_ == PrependScheme::kFirst && piece.at_input_start);
      if (prepend && !absl::StartsWith(replaced.text, replacement_)) {
        replaced.text = absl::StrCat(replacement_, replaced.text);
      }
      if (!split_) return std::vector<Piece>{std::move(replaced)};
      return SplitPiece(replaced, split_pattern_->FindAll(replaced.text),
                        SplitBehavior::kMergedWithNext, /*invert=*/false);
    });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  std::unique_ptr<Pattern> split_pattern_;
};

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseMetaspace(const Json& value,
                                                             absl::string_view path) {
  ASSIGN_OR_RETURN(std::string replacement, StringField(value, "replacement", path));
  size_t end = 0;
  if (replacement.empty() || (NextCodePoint(replacement, &end), end != replacement.size())) {
    return FieldError(JoinPath(path, "replacement"), "must be exactly one character");
  }
  ASSIGN_OR_RETURN(const bool add_prefix_space,
                   BoolField(value, "add_prefix_space", path, /*fallback=*/true));
  PrependScheme scheme = add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
  const Json* scheme_json = FindField(value, "prepend_scheme");
  if (scheme_json != nullptr && !scheme_json->is_null()) {
    const std::string name = scheme_json->is_string() ? scheme_json->get<std::string>() : "";
    if (name == "first") {
      scheme = PrependScheme::kFirst;
    } else if (name == "always") {
      scheme = PrependScheme::kAlways;
    } else if (name == "never") {
      scheme = PrependScheme::kNever;
    } else {
      return FieldError(JoinPath(path, "prepend_scheme"), "must be first, always or never");
    }
  }
  ASSIGN_OR_RETURN(const bool split, BoolField(value, "split", path, /*fallback=*/true));
  return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), scheme, split);
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSplit(const Json& value,
                                                         absl::string_view path) {
  ASSIGN_OR_RETURN(const Json* pattern_json, RequiredField(value, "pattern", path));
  ASSIGN_OR_RETURN(std::unique_ptr<Pattern> pattern,
                   ParsePattern(*pattern_json, JoinPath(path, "pattern")));
  ASSIGN_OR_RETURN(const std::string behavior_name, StringField(value, "behavior", path));
  ASSIGN_OR_RETURN(const SplitBehavior behavior,
                   ParseSplitBehavior(behavior_name, JoinPath(path, "behavior")));
  ASSIGN_OR_RETURN(const bool invert, BoolField(value, "invert", path, /*fallback=*/false));
  return std::make_unique<SplitPreTokenizer>(std::move(pattern), behavior, invert);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& value,
                                                                absl::string_view path) {
  if (value.is_null()) return nullptr;
  ASSIGN_OR_RETURN(const std::string type, ComponentType(value, path));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(const Json* list, ArrayField(value, "pretokenizers", path));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item_path = absl::StrCat(path, ".pretokenizers[", i, "]");
      if ((*list)[i].is_null()) return FieldError(item_path, "must be an object");
      ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step,
                       ParsePreTokenizer((*list)[i], item_path));
      steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Split") return ParseSplit(value, path);
  if (type == "Metaspace") return ParseMetaspace(value, path);
  if (type == "ByteLevel") {
    ASSIGN_OR_RETURN(const bool add_prefix_space,
                     BoolField(value, "add_prefix_space", path, /*fallback=*/true));
    ASSIGN_OR_RETURN(const bool use_regex, BoolField(value, "use_regex", path, true));
    std::unique_ptr<Pattern> regex;
    if (use_regex) {
      ASSIGN_OR_RETURN(regex, Pattern::Regex(kGpt2Regex));
    }
    return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, std::move(regex));
  }
  if (type == "Digits") {
    ASSIGN_OR_RETURN(const bool individual, BoolField(value, "individual_digits", path, false));
    ASSIGN_OR_RETURN(std::unique_ptr<Pattern> digit, Pattern::Regex("\\p{N}"));
    return std::make_unique<SplitPreTokenizer>(
        std::move(digit), individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
        /*invert=*/false);
  }
  return FieldError(JoinPath(path, "type"),
                    absl::StrCat("unsupported pre_tokenizer type \"", type,
                                 "\" (supported: Sequence, Split, ByteLevel, Metaspace, Digits)"));
}

}  // namespace kvserve::hf
