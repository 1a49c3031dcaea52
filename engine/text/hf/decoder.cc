#include "engine/text/hf/decoder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/text/hf/byte_level.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/normalizer.h"
#include "engine/text/hf/pattern.h"
#include "engine/text/utf8.h"

namespace kvserve::hf {
namespace {

constexpr char kReplacementChar[] = "\xEF\xBF\xBD";

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    for (const auto& step : steps_) tokens = step->DecodeChain(std::move(tokens));
    return tokens;
  }
  bool JoinsByteRuns() const override {
    for (const auto& step : steps_) {
      if (step->JoinsByteRuns()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// Maps byte-level characters back to bytes. A token with any character outside
// the mapping (e.g. an added token) contributes its own UTF-8 bytes.
class ByteLevelDecoder final : public Decoder {
 public:
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool all_mapped = true;
      for (size_t pos = 0; pos < token.size() && all_mapped;) {
        const std::optional<unsigned char> b = CharToByte(NextCodePoint(token, &pos));
        if (b) mapped.push_back(static_cast<char>(*b));
        all_mapped = b.has_value();
      }
      bytes += all_mapped ? mapped : token;
    }
    return {SanitizeUtf8(bytes)};
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Pattern> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) token = ReplaceAll(*pattern_, content_, token);
    return tokens;
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  std::string content_;
};

}  // namespace

std::optional<unsigned char> ByteFallbackByte(absl::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  if (token[3] == '+' && lo >= 0) return static_cast<unsigned char>(lo);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

namespace {

// Joins runs of <0xXX> tokens into text; a run that is not valid UTF-8 becomes
// one U+FFFD per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_length = 0;
    const auto flush = [&] {
      if (run_length == 0) return;
      if (SanitizeUtf8(run) == run) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run_length; ++i) out.emplace_back(kReplacementChar);
      }
      run.clear();
      run_length = 0;
    };
    for (std::string& token : tokens) {
      if (const std::optional<unsigned char> b = ByteFallbackByte(token)) {
        run.push_back(static_cast<char>(*b));
        ++run_length;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    return out;
  }
  bool JoinsByteRuns() const override { return true; }
};

class FuseDecoder final : public Decoder {
 public:
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    std::string all;
    for (const std::string& token : tokens) all += token;
    return {all};
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) {
      std::vector<size_t> offsets;  // byte offset of each character, then the end
      std::vector<char32_t> chars;
      for (size_t pos = 0; pos < token.size();) {
        offsets.push_back(pos);
        chars.push_back(NextCodePoint(token, &pos));
      }
      offsets.push_back(token.size());
      size_t begin = 0, end = chars.size();
      while (begin < std::min(start_, chars.size()) && chars[begin] == content_) ++begin;
      for (size_t i = 0; i < stop_ && end > 0 && chars[end - 1] == content_; ++i) --end;
      token = begin < end ? token.substr(offsets[begin], offsets[end] - offsets[begin]) : "";
    }
    return tokens;
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

// SentencePiece: ▁ becomes a space, except in the first token when a ▁ was prepended.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool prepended)
      : replacement_(replacement), prepended_(prepended) {}
  std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (size_t pos = 0; pos < tokens[i].size();) {
        const char32_t c = NextCodePoint(tokens[i], &pos);
        if (c != replacement_) {
          AppendUtf8(c, &out);
        } else if (!(i == 0 && prepended_)) {
          out.push_back(' ');
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  char32_t replacement_;
  bool prepended_;
};

// The single character of a string field.
absl::StatusOr<char32_t> CharField(const Json& value, absl::string_view key,
                                   absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string text, StringField(value, key, path));
  size_t end = 0;
  if (text.empty()) return FieldError(JoinPath(path, key), "must be exactly one character");
  const char32_t c = NextCodePoint(text, &end);
  if (end != text.size()) return FieldError(JoinPath(path, key), "must be exactly one character");
  return c;
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseMetaspaceDecoder(const Json& value,
                                                               absl::string_view path) {
  ASSIGN_OR_RETURN(const char32_t replacement, CharField(value, "replacement", path));
  ASSIGN_OR_RETURN(bool prepended, BoolField(value, "add_prefix_space", path, true));
  const Json* scheme = FindField(value, "prepend_scheme");
  if (scheme != nullptr && !scheme->is_null()) {
    if (!scheme->is_string()) return FieldError(JoinPath(path, "prepend_scheme"), "bad value");
    const std::string name = scheme->get<std::string>();
    if (name != "first" && name != "always" && name != "never") {
      return FieldError(JoinPath(path, "prepend_scheme"), "must be first, always or never");
    }
    prepended = name != "never";
  }
  return std::make_unique<MetaspaceDecoder>(replacement, prepended);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& value, absl::string_view path) {
  if (value.is_null()) return nullptr;
  ASSIGN_OR_RETURN(const std::string type, ComponentType(value, path));
  if (type == "Sequence") {
    ASSIGN_OR_RETURN(const Json* list, ArrayField(value, "decoders", path));
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item_path = absl::StrCat(path, ".decoders[", i, "]");
      if ((*list)[i].is_null()) return FieldError(item_path, "must be an object");
      ASSIGN_OR_RETURN(std::unique_ptr<Decoder> step, ParseDecoder((*list)[i], item_path));
      steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Metaspace") return ParseMetaspaceDecoder(value, path);
  if (type == "Replace") {
    ASSIGN_OR_RETURN(const Json* pattern_json, RequiredField(value, "pattern", path));
    ASSIGN_OR_RETURN(std::unique_ptr<Pattern> pattern,
                     ParsePattern(*pattern_json, JoinPath(path, "pattern")));
    ASSIGN_OR_RETURN(std::string content, StringField(value, "content", path));
    return std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content));
  }
  if (type == "Strip") {
    ASSIGN_OR_RETURN(const char32_t content, CharField(value, "content", path));
    ASSIGN_OR_RETURN(const int64_t start, IntField(value, "start", path, 0));
    ASSIGN_OR_RETURN(const int64_t stop, IntField(value, "stop", path, 0));
    if (start < 0 || stop < 0) return FieldError(path, "start and stop must not be negative");
    return std::make_unique<StripDecoder>(content, start, stop);
  }
  return FieldError(JoinPath(path, "type"),
                    absl::StrCat("unsupported decoder type \"", type,
                                 "\" (supported: Sequence, ByteLevel, Replace, ByteFallback, "
                                 "Fuse, Strip, Metaspace)"));
}

}  // namespace kvserve::hf
