#include "engine/text/chat_template/lexer.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t open = FindTagOpen(pos_);
      if (open == std::string::npos) {
        Emit(TokenType::kText, src_.substr(pos_));
        break;
      }
      char kind = src_[open + 1];  // '{', '%' or '#'
      size_t after = open + 2;
      char sign = (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) ? src_[after] : 0;
      std::string text = src_.substr(pos_, open - pos_);
      if (sign == '-') {
        size_t end = text.find_last_not_of(" \t\n\r\f\v");
        text.erase(end == std::string::npos ? 0 : end + 1);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag preceded on its line by
        // whitespace only takes that whitespace away.
        size_t line_start = text.rfind('\n');
        line_start = line_start == std::string::npos ? 0 : line_start + 1;
        if ((line_start > 0 || line_starting) &&
            text.find_first_not_of(" \t\f\v\r", line_start) == std::string::npos) {
          text.erase(line_start);
        }
      }
      Emit(TokenType::kText, text);
      line_ += CountNewlines(pos_, after);
      pos_ = after + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = LexCommentEnd();
      } else if (kind == '%' && TryRaw(sign)) {
        line_starting = false;
      } else {
        line_starting = LexTag(kind == '{');
      }
    }
    tokens_.push_back({TokenType::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t FindTagOpen(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  int CountNewlines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to && i < src_.size(); ++i) n += src_[i] == '\n';
    return n;
  }

  void Emit(TokenType type, std::string value) {
    if (type == TokenType::kText && value.empty()) return;
    tokens_.push_back({type, std::move(value), line_});
  }

  [[noreturn]] void Error(const std::string& what) const {
    Fail(absl::StrCat("line ", line_, ": ", what));
  }

  // Consumes a tag's closing marker at pos_ (after whitespace control) and
  // returns whether what it consumed ends with a newline (jinja2 lstrips the
  // next tag only at a line start).
  bool ConsumeEnd(std::string_view marker, bool trim_newline) {
    if (src_[pos_] == '-') {
      pos_ += 1 + marker.size();
      size_t start = pos_;
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      line_ += CountNewlines(start, pos_);
      return pos_ > start && src_[pos_ - 1] == '\n';
    }
    if (src_[pos_] == '+') {
      pos_ += 1 + marker.size();
      return false;
    }
    pos_ += marker.size();
    if (trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    return false;
  }

  bool LexCommentEnd() {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) Error("missing end of comment tag '#}'");
    size_t marker = end;
    if (end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')) marker = end - 1;
    line_ += CountNewlines(pos_, marker);
    pos_ = marker;
    return ConsumeEnd("#}", /*trim_newline=*/true);
  }

  // {% raw %}...{% endraw %}: the content is text, tags and all.
  bool TryRaw(char sign) {
    size_t p = pos_;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) {
      return false;
    }
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    bool strip_after = false;
    if (src_.compare(p, 3, "-%}") == 0) {
      strip_after = true;
      p += 3;
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    if (strip_after) {
      while (p < src_.size() && IsSpace(src_[p])) ++p;
    }
    for (size_t q = src_.find("{%", p); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      char end_sign = (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ? src_[r] : 0;
      if (end_sign) ++r;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      std::string text = src_.substr(p, q - p);
      if (end_sign == '-') {
        size_t last = text.find_last_not_of(" \t\n\r\f\v");
        text.erase(last == std::string::npos ? 0 : last + 1);
      } else if (end_sign != '+') {
        size_t line_start = text.rfind('\n');
        line_start = line_start == std::string::npos ? 0 : line_start + 1;
        if (line_start > 0 && text.find_first_not_of(" \t\f\v\r", line_start) == std::string::npos) {
          text.erase(line_start);
        }
      }
      line_ += CountNewlines(pos_, r);
      Emit(TokenType::kText, text);
      pos_ = r;
      if (pos_ >= src_.size() || (src_.compare(pos_, 2, "%}") != 0 && src_.compare(pos_, 3, "-%}") != 0 &&
                                  src_.compare(pos_, 3, "+%}") != 0)) {
        Error("expected '%}' after 'endraw'");
      }
      ConsumeEnd("%}", /*trim_newline=*/true);
      return true;
    }
    Error("missing end of raw directive ('{% endraw %}')");
  }

  bool LexTag(bool is_print) {
    std::string_view marker = is_print ? "}}" : "%}";
    tokens_.push_back({is_print ? TokenType::kPrintBegin : TokenType::kBlockBegin, "", line_});
    open_brackets_ = 0;
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        Error(is_print ? "unexpected end of template, expected '}}'"
                       : "unexpected end of template, expected '%}'");
      }
      // As in jinja2, `}}` or `%}` ends the tag only outside brackets, so
      // {{ {'a': {'b': 1}} }} is one dict.
      bool at_end = open_brackets_ == 0 && (src_.compare(pos_, 2, marker) == 0 ||
                    (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, marker) == 0) ||
                    (!is_print && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, marker) == 0));
      if (at_end) {
        int line = line_;
        bool newline = ConsumeEnd(marker, /*trim_newline=*/!is_print);
        tokens_.push_back({is_print ? TokenType::kPrintEnd : TokenType::kBlockEnd, "", line});
        return newline;
      }
      LexOne();
    }
  }

  void LexOne() {
    char c = src_[pos_];
    if (IsDigit(c)) return LexNumber();
    if (IsNameStart(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
      Emit(TokenType::kName, src_.substr(start, pos_ - start));
      return;
    }
    if (c == '\'' || c == '"') return LexString(c);
    static constexpr std::array<std::string_view, 6> kTwoChar = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwoChar) {
      if (src_.compare(pos_, 2, op) == 0) {
        Emit(TokenType::kOperator, std::string(op));
        pos_ += 2;
        return;
      }
    }
    if (c == '(' || c == '[' || c == '{') ++open_brackets_;
    if ((c == ')' || c == ']' || c == '}') && open_brackets_ > 0) --open_brackets_;
    if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) != std::string_view::npos) {
      Emit(TokenType::kOperator, std::string(1, c));
      ++pos_;
      return;
    }
    Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  size_t Digits(size_t p) const {
    // \d+(_\d+)*
    while (p < src_.size() && IsDigit(src_[p])) {
      ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && IsDigit(src_[p + 1])) ++p;
    }
    return p;
  }

  void LexNumber() {
    size_t start = pos_;
    size_t p = Digits(pos_);
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
      p = Digits(p + 1);
      is_float = true;
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        p = Digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = start; i < p; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    pos_ = p;
    Emit(is_float ? TokenType::kFloat : TokenType::kInteger, text);
  }

  void LexString(char quote) {
    std::string value;
    size_t p = pos_ + 1;
    int start_line = line_;
    while (true) {
      if (p >= src_.size()) Error("unterminated string");
      char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || p + 1 >= src_.size()) {
        value.push_back(c);
        ++p;
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      auto hex = [&](int n) {
        uint32_t cp = 0;
        for (int i = 0; i < n; ++i) {
          if (p >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[p]))) {
            Error("truncated \\x, \\u or \\U escape in string");
          }
          char h = src_[p++];
          cp = cp * 16 + (IsDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        AppendUtf8(cp, &value);
      };
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': ++line_; break;  // a backslash-newline joins lines
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          value += '\\';
          value += e;
      }
    }
    pos_ = p + 1;
    tokens_.push_back({TokenType::kString, std::move(value), start_line});
  }

  std::string src_;
  size_t pos_ = 0;
  int open_brackets_ = 0;  // inside the current tag
  int line_ = 1;
  std::vector<Token> tokens_;
};

std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> Tokenize(std::string_view source) {
  return Lexer(NormalizeNewlines(source)).Run();
}

std::string Describe(const Token& token) {
  switch (token.type) {
    case TokenType::kText: return "template text";
    case TokenType::kPrintBegin: return "'{{'";
    case TokenType::kPrintEnd: return "end of print statement '}}'";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "end of statement block '%}'";
    case TokenType::kString: return "a string";
    case TokenType::kInteger:
    case TokenType::kFloat: return absl::StrCat("number ", token.value);
    case TokenType::kEnd: return "end of template";
    default: return absl::StrCat("'", token.value, "'");
  }
}

}  // namespace kvserve::chat_template
