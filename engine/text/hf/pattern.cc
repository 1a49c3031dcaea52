#include "engine/text/hf/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"
#include "engine/text/hf/json_fields.h"
#include "engine/text/hf/piece.h"

namespace kvserve::hf {

struct Pattern::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Pattern::~Pattern() = default;

std::string OnigurumaToPcre2(absl::string_view regex) {
  // Oniguruma's \s: [\t\n\v\f\r\x{85}] and the Z categories. PCRE2's also has
  // U+180E (a space before Unicode 6.3), so the class is spelled out.
  constexpr absl::string_view kSpace = "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[++i];
      if (next == 's') {
        absl::StrAppend(&out, in_class ? kSpace : absl::StrCat("[", kSpace, "]"));
      } else if (next == 'S' && !in_class) {
        absl::StrAppend(&out, "[^", kSpace, "]");
      } else {
        out.push_back(c);
        out.push_back(next);  // includes \S inside a class: kept (differs only at U+0085)
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out.push_back(regex[++i]);
      if (i + 1 < regex.size() && regex[i + 1] == ']') out.push_back(regex[++i]);
      continue;
    }
    if (in_class && c == '[' && i + 1 < regex.size() && regex[i + 1] == ':') {
      const size_t close = regex.find(":]", i + 2);  // POSIX class like [:alpha:]
      if (close != absl::string_view::npos) {
        out.append(regex.data() + i, close + 2 - i);
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Pattern>> Pattern::Literal(absl::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("empty string pattern");
  std::unique_ptr<Pattern> pattern(new Pattern());
  pattern->literal_ = std::string(text);
  return pattern;
}

absl::StatusOr<std::unique_ptr<Pattern>> Pattern::Regex(absl::string_view regex) {
  const std::string translated = OnigurumaToPcre2(regex);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("invalid regex \"", regex, "\": ",
                                                   reinterpret_cast<const char*>(message),
                                                   " (at offset ", error_offset, ")"));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
  std::unique_ptr<Pattern> pattern(new Pattern());
  pattern->regex_ = std::make_unique<Compiled>();
  pattern->regex_->code = code;
  return pattern;
}

std::vector<Match> Pattern::FindAll(absl::string_view text) const {
  std::vector<Match> matches;
  if (!regex_) {
    for (size_t at = text.find(literal_); at != absl::string_view::npos;
         at = text.find(literal_, at + literal_.size())) {
      matches.emplace_back(at, at + literal_.size());
    }
    return matches;
  }
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(regex_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data,
                         nullptr);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      // The JIT's stack ran out (a long subject): the interpreter keeps its
      // backtracking state on the heap.
      rc = pcre2_match(regex_->code, subject, text.size(), start,
                       PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data, nullptr);
    }
    if (rc < 0) break;  // no match (or still a resource limit: the rest is unmatched)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin == end && have_last && end == last_end) {
      // An empty match where the last one ended: retry one character later.
      if (start >= text.size()) break;
      start += Utf8CharLength(static_cast<unsigned char>(text[start]));
      continue;
    }
    matches.emplace_back(begin, end);
    have_last = true;
    last_end = end;
    start = end;
  }
  pcre2_match_data_free(data);
  return matches;
}

absl::StatusOr<std::unique_ptr<Pattern>> ParsePattern(const Json& value, absl::string_view path) {
  if (value.is_object() && value.size() == 1) {
    const Json* literal = FindField(value, "String");
    const Json* regex = FindField(value, "Regex");
    absl::StatusOr<std::unique_ptr<Pattern>> pattern =
        absl::InvalidArgumentError("unreachable");
    if (literal != nullptr && literal->is_string()) {
      pattern = Pattern::Literal(literal->get<std::string>());
    } else if (regex != nullptr && regex->is_string()) {
      pattern = Pattern::Regex(regex->get<std::string>());
    } else {
      return FieldError(path, "must be {\"String\": text} or {\"Regex\": pattern}");
    }
    if (!pattern.ok()) return FieldError(path, pattern.status().message());
    return pattern;
  }
  return FieldError(path, "must be {\"String\": text} or {\"Regex\": pattern}");
}

}  // namespace kvserve::hf
