// A recursive-descent parser for GBNF (see gbnf.h) that builds the byte-level
// Grammar directly: literals become one byte set per byte, classes one byte
// set (ASCII) or a rule of UTF-8 byte sequences, groups and repetitions
// generated rules.
#include "engine/grammar/gbnf.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/grammar/grammar_checks.h"
#include "engine/grammar/pushdown.h"
#include "engine/grammar/utf8_ranges.h"

// RETURN_IF_ERROR for this file (the library does not depend on base/).
#define RETURN_IF_ERROR_(expr)                \
  do {                                        \
    if (absl::Status s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)

namespace kvserve::grammar {
namespace {

using Sequence = std::vector<Element>;
using Alternatives = std::vector<Sequence>;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  absl::StatusOr<std::shared_ptr<const Grammar>> Parse() {
    if (text_.size() > limits_.max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("grammar: ", text_.size(),
                                                       " bytes, more than the limit of ",
                                                       limits_.max_bytes));
    }
    SkipSpace();
    if (AtEnd()) return absl::InvalidArgumentError("grammar: empty (it needs a rule named root)");
    while (!AtEnd()) {
      const size_t at = pos_;
      std::string name = ParseName();
      if (name.empty()) return Error(at, "expected a rule name");
      SkipSpace();
      if (text_.substr(pos_, 3) != "::=") return Error(pos_, "expected '::=' after the rule name");
      pos_ += 3;
      const int32_t rule = RuleIndex(name, at);
      if (defined_[rule]) return Error(at, absl::StrCat("rule '", name, "' is defined twice"));
      defined_[rule] = true;
      Alternatives alts;
      if (absl::Status s = ParseAlternatives(alts, 0); !s.ok()) return s;
      grammar_->rules[rule].alternatives = std::move(alts);
      if (Peek() == ')') return Error(pos_, "unbalanced ')'");
      SkipSpace();
    }
    for (size_t r = 0; r < grammar_->rules.size(); ++r) {
      if (!defined_[r]) {
        return Error(first_use_[r],
                     absl::StrCat("undefined rule '", grammar_->rules[r].name, "'"));
      }
    }
    auto root = names_.find("root");
    if (root == names_.end()) return absl::InvalidArgumentError("grammar: no rule named root");
    grammar_->root = root->second;
    if (absl::Status s = CheckGrammar(*grammar_, "grammar"); !s.ok()) return s;
    return std::shared_ptr<const Grammar>(std::move(grammar_));
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  absl::Status Error(size_t at, std::string_view problem) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("grammar: line ", line, ", column ", column, ": ", std::string(problem)));
  }

  // Spaces, tabs, newlines and # comments.
  void SkipSpace() {
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string ParseName() {
    const size_t start = pos_;
    while (!AtEnd() && IsNameChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // Whether a rule definition ("name ::=") starts at pos_.
  bool AtRuleDefinition() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' ||
                                text_[p] == '\r')) {
      ++p;
    }
    return text_.substr(p, 3) == "::=";
  }

  int32_t RuleIndex(const std::string& name, size_t at) {
    auto [it, inserted] = names_.try_emplace(name, static_cast<int32_t>(grammar_->rules.size()));
    if (inserted) {
      grammar_->rules.push_back(Rule{name, {}});
      defined_.push_back(false);
      first_use_.push_back(at);
    }
    return it->second;
  }

  int32_t NewRule(Alternatives alts) {
    const int32_t index = static_cast<int32_t>(grammar_->rules.size());
    grammar_->rules.push_back(Rule{absl::StrCat("_", index), std::move(alts)});
    defined_.push_back(true);
    first_use_.push_back(0);
    return index;
  }

  Element Bytes(const ByteSet& set) {
    std::string key = set.to_string();
    auto [it, inserted] =
        byte_set_index_.try_emplace(std::move(key), static_cast<int32_t>(grammar_->byte_sets.size()));
    if (inserted) grammar_->byte_sets.push_back(set);
    return Element{Element::Kind::kBytes, it->second};
  }

  static Element Call(int32_t rule) { return Element{Element::Kind::kRule, rule}; }

  absl::Status CountElements(size_t n) {
    elements_ += n;
    if (elements_ > limits_.max_elements) {
      return absl::ResourceExhaustedError(
          absl::StrCat("grammar: more than ", limits_.max_elements,
                       " elements once repetitions are expanded (the limit)"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseAlternatives(Alternatives& alts, int depth) {
    if (depth > 256) return Error(pos_, "groups nested more than 256 deep");
    while (true) {
      Sequence seq;
      RETURN_IF_ERROR_(ParseSequence(seq, depth));
      alts.push_back(std::move(seq));
      SkipSpace();
      if (Peek() != '|') return absl::OkStatus();
      ++pos_;
    }
  }

  absl::Status ParseSequence(Sequence& seq, int depth) {
    while (true) {
      SkipSpace();
      if (AtEnd() || Peek() == '|' || Peek() == ')' || AtRuleDefinition()) {
        return absl::OkStatus();
      }
      Sequence item;
      RETURN_IF_ERROR_(ParsePrimary(item, depth));
      RETURN_IF_ERROR_(ParseQuantifier(item));
      RETURN_IF_ERROR_(CountElements(item.size()));
      seq.insert(seq.end(), item.begin(), item.end());
    }
  }

  absl::Status ParsePrimary(Sequence& item, int depth) {
    const size_t at = pos_;
    const char c = Peek();
    if (c == '"') {
      ++pos_;
      std::vector<uint8_t> bytes;
      while (true) {
        if (AtEnd()) return Error(at, "unterminated string literal");
        if (Peek() == '"') break;
        uint32_t cp = 0;
        RETURN_IF_ERROR_(ParseChar(cp));
        AppendUtf8(cp, bytes);
      }
      ++pos_;
      for (uint8_t b : bytes) {
        ByteSet set;
        set.set(b);
        item.push_back(Bytes(set));
      }
      return absl::OkStatus();
    }
    if (c == '[') return ParseClass(item);
    if (c == '.') {
      ++pos_;
      item.push_back(Call(AnyCharRule()));
      return absl::OkStatus();
    }
    if (c == '(') {
      ++pos_;
      Alternatives alts;
      RETURN_IF_ERROR_(ParseAlternatives(alts, depth + 1));
      if (Peek() != ')') return Error(at, "unbalanced '(': no matching ')'");
      ++pos_;
      if (alts.size() == 1) {
        item = std::move(alts[0]);
      } else {
        item.push_back(Call(NewRule(std::move(alts))));
      }
      return absl::OkStatus();
    }
    if (IsNameChar(c)) {
      const std::string name = ParseName();
      item.push_back(Call(RuleIndex(name, at)));
      return absl::OkStatus();
    }
    if (c == ')') return Error(at, "unbalanced ')'");
    return Error(at, absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  // One character of a literal or class, escapes resolved, as a code point.
  absl::Status ParseChar(uint32_t& cp) {
    const size_t at = pos_;
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      if (pos_ + 1 >= text_.size()) return Error(at, "a '\\' at the end");
      const char e = text_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n': cp = '\n'; return absl::OkStatus();
        case 'r': cp = '\r'; return absl::OkStatus();
        case 't': cp = '\t'; return absl::OkStatus();
        case '0': cp = 0; return absl::OkStatus();
        case '\\': case '"': case '[': case ']': case '-': case '^': case '\'':
          cp = static_cast<unsigned char>(e);
          return absl::OkStatus();
        case 'x': return ParseHex(2, at, cp);
        case 'u': return ParseHex(4, at, cp);
        case 'U': return ParseHex(8, at, cp);
        default:
          return Error(at, absl::StrCat("unknown escape '\\", std::string(1, e), "'"));
      }
    }
    // A UTF-8 character of the grammar's own text.
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || pos_ + n > text_.size()) return Error(at, "invalid UTF-8 in the grammar");
    cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (int i = 1; i < n; ++i) {
      const unsigned char k = static_cast<unsigned char>(text_[pos_ + i]);
      if ((k & 0xC0) != 0x80) return Error(at, "invalid UTF-8 in the grammar");
      cp = (cp << 6) | (k & 0x3F);
    }
    pos_ += n;
    return absl::OkStatus();
  }

  absl::Status ParseHex(int digits, size_t at, uint32_t& cp) {
    cp = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = Peek();
      int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (v < 0) return Error(at, absl::StrCat("expected ", digits, " hex digits in the escape"));
      cp = cp * 16 + v;
      ++pos_;
    }
    if (cp > 0x10FFFF) return Error(at, "code point above U+10FFFF");
    return absl::OkStatus();
  }

  absl::Status ParseClass(Sequence& item) {
    const size_t at = pos_;
    ++pos_;  // '['
    bool negate = false;
    if (Peek() == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (true) {
      if (AtEnd()) return Error(at, "unterminated character class");
      if (Peek() == ']') break;
      uint32_t lo = 0;
      RETURN_IF_ERROR_(ParseChar(lo));
      uint32_t hi = lo;
      if (Peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        RETURN_IF_ERROR_(ParseChar(hi));
        if (hi < lo) return Error(at, "character range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;  // ']'
    ranges = NormalizeRanges(std::move(ranges), negate);
    if (ranges.empty()) return Error(at, "character class matches nothing");
    item.push_back(ClassElement(ranges));
    return absl::OkStatus();
  }

  // One byte set when every code point is ASCII, else a rule whose
  // alternatives are the ASCII set and the UTF-8 byte sequences.
  Element ClassElement(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
    ByteSet ascii;
    Alternatives alts;
    for (auto [lo, hi] : ranges) {
      for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x7F); ++cp) ascii.set(cp);
      if (hi < 0x80) continue;
      for (const ByteRangeSequence& seq : Utf8Sequences(std::max<uint32_t>(lo, 0x80), hi)) {
        Sequence s;
        for (ByteRange r : seq) {
          ByteSet set;
          for (int b = r.lo; b <= r.hi; ++b) set.set(b);
          s.push_back(Bytes(set));
        }
        alts.push_back(std::move(s));
      }
    }
    if (alts.empty()) return Bytes(ascii);
    if (ascii.any()) alts.insert(alts.begin(), Sequence{Bytes(ascii)});
    return Call(NewRule(std::move(alts)));
  }

  int32_t AnyCharRule() {
    if (any_char_rule_ < 0) any_char_rule_ = ClassElement({{0, 0x10FFFF}}).index;
    return any_char_rule_;
  }

  absl::Status ParseQuantifier(Sequence& item) {
    const size_t at = pos_;
    const char c = Peek();
    if (c != '*' && c != '+' && c != '?' && c != '{') return absl::OkStatus();
    ++pos_;
    int64_t min = 0, max = -1;  // -1: unbounded
    if (c == '+') min = 1;
    if (c == '?') max = 1;
    if (c == '{') {
      SkipSpace();
      if (!ParseCount(min)) return Error(at, "expected a count after '{'");
      SkipSpace();
      max = min;
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
        max = -1;
        if (Peek() != '}' && !ParseCount(max)) return Error(at, "expected a count or '}'");
        SkipSpace();
      }
      if (Peek() != '}') return Error(at, "expected '}'");
      ++pos_;
      if (max >= 0 && max < min) return Error(at, "repetition {m,n} with n < m");
    }
    constexpr int64_t kMaxCount = 1 << 16;
    if (min > kMaxCount || max > kMaxCount) {
      return Error(at, absl::StrCat("repetition count above ", kMaxCount));
    }
    // The repeated item as one element.
    const Element x = item.size() == 1 ? item[0] : Call(NewRule({item}));
    item.clear();
    RETURN_IF_ERROR_(CountElements(size_t(min) + (max < 0 ? 2 : size_t(max - min) * 2)));
    for (int64_t i = 0; i < min; ++i) item.push_back(x);
    if (max < 0) {
      // star ::= x star | ""   (right recursion: a tail call, no stack growth)
      const int32_t star = NewRule({});
      grammar_->rules[star].alternatives = {{x, Call(star)}, {}};
      item.push_back(Call(star));
    } else if (max > min) {
      // opt_k ::= x opt_{k-1} | ""  with opt_1 ::= x | ""
      int32_t inner = NewRule({{x}, {}});
      for (int64_t k = 2; k <= max - min; ++k) inner = NewRule({{x, Call(inner)}, {}});
      item.push_back(Call(inner));
    }
    return absl::OkStatus();
  }

  bool ParseCount(int64_t& n) {
    const size_t start = pos_;
    n = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9' && n <= (1 << 20)) {
      n = n * 10 + (Peek() - '0');
      ++pos_;
    }
    return pos_ > start;
  }

  std::string_view text_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  size_t elements_ = 0;
  std::unique_ptr<Grammar> grammar_ = std::make_unique<Grammar>();
  absl::flat_hash_map<std::string, int32_t> names_;
  absl::flat_hash_map<std::string, int32_t> byte_set_index_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  int32_t any_char_rule_ = -1;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text,
                                                         const GbnfLimits& limits) {
  return GbnfParser(text, limits).Parse();
}

absl::StatusOr<bool> GbnfMatches(std::string_view gbnf, std::string_view input) {
  absl::StatusOr<std::shared_ptr<const Grammar>> grammar = ParseGbnf(gbnf);
  if (!grammar.ok()) return grammar.status();
  Pushdown automaton(*grammar);
  int32_t state = automaton.Start();
  for (char c : input) {
    state = automaton.Step(state, static_cast<uint8_t>(c));
    if (state < 0) return false;
  }
  return automaton.Accepting(state);
}

}  // namespace kvserve::grammar
