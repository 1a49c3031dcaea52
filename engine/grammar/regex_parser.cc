// A recursive-descent parser for the ECMAScript-style regular expressions of
// regex_ast.h. Everything non-regular (back-references, look-around, word
// boundaries) and every flag-dependent construct is refused with its offset,
// so an accepted regex means exactly what its GBNF matches.
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/grammar/regex_ast.h"

namespace kvserve::grammar {
namespace {

// Groups nest at most this deep: the parser and the emitter recurse per level.
constexpr int kMaxDepth = 200;

CodePointSet Digits() { return {{'0', '9'}}; }
CodePointSet WordChars() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
// ECMAScript's WhiteSpace and LineTerminator code points.
CodePointSet Spaces() {
  return {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}

RegexNode Literal(uint32_t cp) {
  RegexNode node;
  node.kind = RegexNode::Kind::kLiteral;
  node.code_point = cp;
  return node;
}

RegexNode Class(CodePointSet set) {
  RegexNode node;
  node.kind = RegexNode::Kind::kClass;
  node.set = std::move(set);
  return node;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<RegexNode> Parse() {
    auto node = ParseAlternation(0);
    if (!node.ok()) return node.status();
    if (pos_ < text_.size()) return Error(pos_, "unbalanced ')'");
    return node;
  }

 private:
  absl::Status Error(size_t offset, std::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("regex: at offset ", offset, ": ", std::string(problem)));
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  absl::StatusOr<RegexNode> ParseAlternation(int depth) {
    if (depth > kMaxDepth) return Error(pos_, absl::StrCat("groups nest deeper than ", kMaxDepth));
    RegexNode alt;
    alt.kind = RegexNode::Kind::kAlternate;
    while (true) {
      auto seq = ParseSequence(depth);
      if (!seq.ok()) return seq.status();
      alt.children.push_back(*std::move(seq));
      if (Peek() != '|' || AtEnd()) break;
      ++pos_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  absl::StatusOr<RegexNode> ParseSequence(int depth) {
    RegexNode seq;
    seq.kind = RegexNode::Kind::kConcat;
    const size_t start = pos_;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      const size_t at = pos_;
      if (Peek() == '^') {
        if (depth != 0 || at != start) return Error(at, "'^' is supported only at the start");
        ++pos_;
        continue;
      }
      if (Peek() == '$') {
        ++pos_;
        if (depth != 0 || !(AtEnd() || Peek() == '|')) {
          return Error(at, "'$' is supported only at the end");
        }
        continue;
      }
      auto atom = ParseAtom(depth);
      if (!atom.ok()) return atom.status();
      auto repeated = ParseQuantifier(*std::move(atom));
      if (!repeated.ok()) return repeated.status();
      seq.children.push_back(*std::move(repeated));
    }
    if (seq.children.empty()) return RegexNode{};
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  // {m}, {m,} or {m,n} at pos_, or nullopt (then '{' is a literal, as
  // ECMAScript's Annex B reads it). Sets pos_ past it when found.
  std::optional<std::pair<int, int>> ParseBraces(absl::Status& error) {
    size_t p = pos_ + 1;
    const auto number = [&](int& value) {
      const size_t begin = p;
      long long v = 0;
      while (p < text_.size() && text_[p] >= '0' && text_[p] <= '9') {
        v = std::min<long long>(v * 10 + (text_[p] - '0'), 1LL << 40);
        ++p;
      }
      value = static_cast<int>(std::min<long long>(v, kMaxRegexRepeat + 1));
      return p > begin;
    };
    int min = 0, max = 0;
    if (!number(min)) return std::nullopt;
    if (p < text_.size() && text_[p] == '}') {
      max = min;
    } else if (p < text_.size() && text_[p] == ',') {
      ++p;
      if (!number(max)) max = -1;
      if (p >= text_.size() || text_[p] != '}') return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (min > kMaxRegexRepeat || max > kMaxRegexRepeat) {
      error = Error(pos_, absl::StrCat("repetition count above ", kMaxRegexRepeat));
    } else if (max >= 0 && max < min) {
      error = Error(pos_, "repetition {m,n} with n < m");
    }
    pos_ = p + 1;
    return std::make_pair(min, max);
  }

  bool AtQuantifier() {
    const char c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    const size_t saved = pos_;
    absl::Status ignored;
    const bool found = ParseBraces(ignored).has_value();
    pos_ = saved;
    return found;
  }

  absl::StatusOr<RegexNode> ParseQuantifier(RegexNode atom) {
    if (AtEnd()) return atom;
    int min = 0, max = -1;
    const char c = Peek();
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1, ++pos_;
    } else if (c == '?') {
      max = 1, ++pos_;
    } else if (c == '{') {
      absl::Status error;
      auto braces = ParseBraces(error);
      if (!error.ok()) return error;
      if (!braces) return atom;
      min = braces->first, max = braces->second;
    } else {
      return atom;
    }
    if (Peek() == '?' && !AtEnd()) ++pos_;  // lazy: the same language
    if (!AtEnd() && AtQuantifier()) return Error(pos_, "nothing to repeat");
    RegexNode node;
    node.kind = RegexNode::Kind::kRepeat;
    node.min = min;
    node.max = max;
    node.children.push_back(std::move(atom));
    return node;
  }

  absl::StatusOr<RegexNode> ParseGroup(int depth) {
    const size_t open = pos_;
    ++pos_;  // '('
    if (Peek() == '?') {
      const char kind = Peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=' || kind == '!' ||
                 (kind == '<' && (Peek(2) == '=' || Peek(2) == '!'))) {
        return Error(open, "look-around is not supported (not regular)");
      } else if (kind == 'P' && Peek(2) == '=') {
        return Error(open, "back-references are not supported (not regular)");
      } else if (kind == '<' || (kind == 'P' && Peek(2) == '<')) {
        // A named group, ECMAScript's (?<name>...) or Python's (?P<name>...).
        const size_t close = text_.find('>', pos_);
        if (close == std::string_view::npos) return Error(open, "unterminated group name");
        pos_ = close + 1;
      } else {
        return Error(open, "unsupported group syntax '(?'");
      }
    }
    auto inner = ParseAlternation(depth + 1);
    if (!inner.ok()) return inner.status();
    if (Peek() != ')' || AtEnd()) return Error(open, "unbalanced '('");
    ++pos_;
    return inner;
  }

  absl::StatusOr<uint32_t> ParseHex(size_t digits, size_t at) {
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char c = Peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0 || AtEnd()) return Error(at, "malformed hexadecimal escape");
      value = value * 16 + d;
      ++pos_;
    }
    return value;
  }

  // An escape after '\' at `at` (pos_ is past the backslash): either a set
  // (\d \w \s and their negations) or one code point.
  absl::StatusOr<CodePointSet> ParseEscape(size_t at, bool in_class) {
    if (AtEnd()) return Error(at, "trailing backslash");
    const char c = Peek();
    ++pos_;
    switch (c) {
      case 'd':
        return Digits();
      case 'D':
        return Complement(Digits());
      case 'w':
        return WordChars();
      case 'W':
        return Complement(WordChars());
      case 's':
        return Spaces();
      case 'S':
        return Complement(Spaces());
      case 'n':
        return CodePointSet{{'\n', '\n'}};
      case 'r':
        return CodePointSet{{'\r', '\r'}};
      case 't':
        return CodePointSet{{'\t', '\t'}};
      case 'f':
        return CodePointSet{{'\f', '\f'}};
      case 'v':
        return CodePointSet{{'\v', '\v'}};
      case 'b':
        if (in_class) return CodePointSet{{'\b', '\b'}};
        return Error(at, "word boundaries are not supported");
      case 'B':
        return Error(at, "word boundaries are not supported");
      case 'k':
        return Error(at, "back-references are not supported (not regular)");
      case 'p':
      case 'P':
        return Error(at, "Unicode property escapes are not supported");
      case 'c': {
        const char letter = Peek();
        if (!AtEnd() && ((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z'))) {
          ++pos_;
          const uint32_t cp = static_cast<uint32_t>(letter) % 32;
          return CodePointSet{{cp, cp}};
        }
        return Error(at, "malformed control escape \\c");
      }
      case 'x': {
        auto cp = ParseHex(2, at);
        if (!cp.ok()) return cp.status();
        return CodePointSet{{*cp, *cp}};
      }
      case 'u': {
        absl::StatusOr<uint32_t> cp;
        if (Peek() == '{') {
          ++pos_;
          const size_t close = text_.find('}', pos_);
          if (close == std::string_view::npos || close == pos_ || close - pos_ > 6) {
            return Error(at, "malformed \\u{...} escape");
          }
          cp = ParseHex(close - pos_, at);
          ++pos_;
        } else {
          cp = ParseHex(4, at);
        }
        if (!cp.ok()) return cp.status();
        if (*cp > kMaxCodePoint || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
          return Error(at, "escape is not a Unicode scalar value");
        }
        return CodePointSet{{*cp, *cp}};
      }
      case '0':
        if (Peek() >= '0' && Peek() <= '9') return Error(at, "octal escapes are not supported");
        return CodePointSet{{0, 0}};
      default:
        break;
    }
    if (c >= '1' && c <= '9') {
      if (in_class) return Error(at, "octal escapes are not supported");
      return Error(at, "back-references are not supported (not regular)");
    }
    // An identity escape: the character itself (\. \* \\ \/ ...). Letters
    // and digits are refused rather than taken literally: \A, \Z or \z
    // (anchors elsewhere) would otherwise silently match a letter.
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return Error(at, absl::StrCat("unknown escape '\\", std::string(1, c), "'"));
    }
    --pos_;
    uint32_t cp = 0;
    const int len = DecodeUtf8(text_, pos_, cp);
    if (len == 0) return Error(pos_, "invalid UTF-8");
    pos_ += len;
    return CodePointSet{{cp, cp}};
  }

  absl::StatusOr<RegexNode> ParseClass() {
    const size_t open = pos_;
    ++pos_;  // '['
    bool negated = false;
    if (Peek() == '^' && !AtEnd()) negated = true, ++pos_;
    CodePointSet set;
    // One class atom: a set, or a single code point (which may start a range).
    const auto atom = [&]() -> absl::StatusOr<CodePointSet> {
      const size_t at = pos_;
      if (Peek() == '\\') {
        ++pos_;
        return ParseEscape(at, /*in_class=*/true);
      }
      uint32_t cp = 0;
      const int len = DecodeUtf8(text_, pos_, cp);
      if (len == 0) return Error(pos_, "invalid UTF-8");
      pos_ += len;
      return CodePointSet{{cp, cp}};
    };
    while (true) {
      if (AtEnd()) return Error(open, "unterminated character class");
      if (Peek() == ']') break;
      const size_t at = pos_;
      auto first = atom();
      if (!first.ok()) return first.status();
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        auto last = atom();
        if (!last.ok()) return last.status();
        const bool single = first->size() == 1 && first->front().lo == first->front().hi &&
                            last->size() == 1 && last->front().lo == last->front().hi;
        if (!single) return Error(at, "a class escape cannot bound a range");
        if (last->front().lo < first->front().lo) return Error(at, "range out of order");
        set.push_back({first->front().lo, last->front().lo});
        continue;
      }
      set.insert(set.end(), first->begin(), first->end());
    }
    ++pos_;  // ']'
    Normalize(set);
    if (negated) set = Complement(set);
    if (set.empty()) return Error(open, "character class matches nothing");
    return Class(std::move(set));
  }

  absl::StatusOr<RegexNode> ParseAtom(int depth) {
    const size_t at = pos_;
    const char c = Peek();
    switch (c) {
      case '(':
        return ParseGroup(depth);
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return Class(Complement({{'\n', '\n'}}));
      case '*':
      case '+':
      case '?':
        return Error(at, "nothing to repeat");
      case '{':
        if (AtQuantifier()) return Error(at, "nothing to repeat");
        ++pos_;
        return Literal('{');
      case '\\': {
        ++pos_;
        auto set = ParseEscape(at, /*in_class=*/false);
        if (!set.ok()) return set.status();
        if (set->size() == 1 && set->front().lo == set->front().hi) return Literal(set->front().lo);
        return Class(*std::move(set));
      }
      default:
        break;
    }
    uint32_t cp = 0;
    const int len = DecodeUtf8(text_, pos_, cp);
    if (len == 0) return Error(pos_, "invalid UTF-8");
    pos_ += len;
    return Literal(cp);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<RegexNode> ParseRegex(std::string_view regex) { return Parser(regex).Parse(); }

}  // namespace kvserve::grammar
