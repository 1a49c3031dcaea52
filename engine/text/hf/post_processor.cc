#include "engine/text/hf/post_processor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/text/hf/json_fields.h"

namespace kvserve::hf {
namespace {

class SequencePostProcessor final : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override {
    for (const auto& step : steps_) ids = step->Process(std::move(ids));
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// ByteLevel only trims offsets; ids are unchanged.
class IdentityPostProcessor final : public PostProcessor {
 public:
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override { return ids; }
};

// The "single" template: special tokens' ids and the sequence ($A), in order.
class TemplatePostProcessor final : public PostProcessor {
 public:
  // An empty `ids` entry stands for the sequence.
  explicit TemplatePostProcessor(std::vector<std::vector<int32_t>> parts)
      : parts_(std::move(parts)) {}
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override {
    std::vector<int32_t> out;
    for (const std::vector<int32_t>& part : parts_) {
      const std::vector<int32_t>& add = part.empty() ? ids : part;
      out.insert(out.end(), add.begin(), add.end());
    }
    return out;
  }

 private:
  std::vector<std::vector<int32_t>> parts_;
};

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseTemplate(const Json& value,
                                                             absl::string_view path) {
  ASSIGN_OR_RETURN(const Json* single, ArrayField(value, "single", path));
  const Json* special = FindField(value, "special_tokens");
  std::vector<std::vector<int32_t>> parts;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json& piece = (*single)[i];
    const std::string piece_path = absl::StrCat(path, ".single[", i, "]");
    if (const Json* sequence = FindField(piece, "Sequence")) {
      ASSIGN_OR_RETURN(const std::string id, StringField(*sequence, "id", piece_path));
      if (id != "A") {
        return FieldError(piece_path, absl::StrCat("single template uses sequence \"", id,
                                                   "\" (only A is given)"));
      }
      parts.emplace_back();
      continue;
    }
    const Json* token = FindField(piece, "SpecialToken");
    if (token == nullptr) {
      return FieldError(piece_path, "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    ASSIGN_OR_RETURN(const std::string name, StringField(*token, "id", piece_path));
    const Json* entry = special == nullptr ? nullptr : FindField(*special, name);
    const std::string entry_path = absl::StrCat(path, ".special_tokens[\"", name, "\"]");
    if (entry == nullptr) return FieldError(entry_path, "is missing");
    ASSIGN_OR_RETURN(const Json* ids, ArrayField(*entry, "ids", entry_path));
    if (ids->empty()) return FieldError(JoinPath(entry_path, "ids"), "must not be empty");
    std::vector<int32_t> part;
    for (size_t k = 0; k < ids->size(); ++k) {
      ASSIGN_OR_RETURN(const int32_t id, TokenId((*ids)[k], absl::StrCat(entry_path, ".ids[", k,
                                                                          "]")));
      part.push_back(id);
    }
    parts.push_back(std::move(part));
  }
  return std::make_unique<TemplatePostProcessor>(std::move(parts));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const Json& value,
                                                                  absl::string_view path) {
  if (value.is_null()) return nullptr;
  ASSIGN_OR_RETURN(const std::string type, ComponentType(value, path));
  if (type == "TemplateProcessing") return ParseTemplate(value, path);
  if (type == "ByteLevel") return std::make_unique<IdentityPostProcessor>();
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(const Json* list, ArrayField(value, "processors", path));
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item_path = absl::StrCat(path, ".processors[", i, "]");
      if ((*list)[i].is_null()) return FieldError(item_path, "must be an object");
      ASSIGN_OR_RETURN(std::unique_ptr<PostProcessor> step,
                       ParsePostProcessor((*list)[i], item_path));
      steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePostProcessor>(std::move(steps));
  }
  return FieldError(JoinPath(path, "type"),
                    absl::StrCat("unsupported post_processor type \"", type,
                                 "\" (supported: TemplateProcessing, ByteLevel, Sequence)"));
}

}  // namespace kvserve::hf
