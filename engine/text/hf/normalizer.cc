#include "engine/text/hf/normalizer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/pattern.h"
#include "engine/text/hf/unicode_normalization.h"

namespace kvserve::hf {

std::string ReplaceAll(const Pattern& pattern, absl::string_view content,
                       absl::string_view text) {
  std::string out;
  size_t previous = 0;
  for (const auto& [begin, end] : pattern.FindAll(text)) {
    out.append(text.data() + previous, begin - previous);
    out.append(content.data(), content.size());
    previous = end;
  }
  out.append(text.data() + previous, text.size() - previous);
  return out;
}

namespace {

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(std::string& text) const override {
    for (const auto& step : steps_) step->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Prepends to non-empty text only.
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Pattern> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string& text) const override {
    text = ReplaceAll(*pattern_, content_, text);
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  std::string content_;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(bool compose) : compose_(compose) {}
  void Normalize(std::string& text) const override { text = compose_ ? ToNfc(text) : ToNfd(text); }

 private:
  bool compose_;  // NFC, else NFD
};

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& value,
                                                            absl::string_view path) {
  if (value.is_null()) return nullptr;
  ASSIGN_OR_RETURN(const std::string type, ComponentType(value, path));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(const Json* list, ArrayField(value, "normalizers", path));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item_path = absl::StrCat(path, ".normalizers[", i, "]");
      if ((*list)[i].is_null()) return FieldError(item_path, "must be an object");
      ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step, ParseNormalizer((*list)[i], item_path));
      steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "Prepend") {
    ASSIGN_OR_RETURN(std::string prefix, StringField(value, "prepend", path));
    return std::make_unique<PrependNormalizer>(std::move(prefix));
  }
  if (type == "Replace") {
    ASSIGN_OR_RETURN(const Json* pattern_json, RequiredField(value, "pattern", path));
    ASSIGN_OR_RETURN(std::unique_ptr<Pattern> pattern,
                     ParsePattern(*pattern_json, JoinPath(path, "pattern")));
    ASSIGN_OR_RETURN(std::string content, StringField(value, "content", path));
    return std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content));
  }
  if (type == "NFC" || type == "NFD") return std::make_unique<UnicodeNormalizer>(type == "NFC");
  return FieldError(JoinPath(path, "type"),
                    absl::StrCat("unsupported normalizer type \"", type,
                                 "\" (supported: Sequence, Prepend, Replace, NFC, NFD)"));
}

}  // namespace kvserve::hf
