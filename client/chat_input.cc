#include "client/chat_input.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <deque>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace kvserve {
namespace {

constexpr absl::string_view kBlock = "\"\"\"";
constexpr absl::string_view kPasteStart = "\x1b[200~";
constexpr absl::string_view kPasteEnd = "\x1b[201~";
constexpr int kQuotedInsert = 0x16;  // Ctrl-V: libedit inserts the next character as it is

// libedit reads keys through rl_getc_function, a plain function: its state
// lives here. Keys read ahead (an escape sequence that was not a paste
// marker) wait in `pending`.
struct KeyReader {
  std::deque<int> pending;
  bool in_paste = false;
  bool after_cr = false;  // in a paste, "\r\n" is one newline
};
KeyReader g_keys;

// One byte of stdin; -1 at end of input or when Ctrl-C interrupted the read.
int ReadByte() {
  for (;;) {
    // A press before the read began (while libedit set up the line) counts too.
    if (CtrlC::Pressed()) return -1;
    unsigned char c;
    const ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR && !CtrlC::Pressed()) continue;  // SIGWINCH and the like
    return -1;
  }
}

// After an ESC: consumes `marker` (past its ESC) and returns true, or leaves
// what it read in `pending` and returns false.
bool ReadMarker(absl::string_view marker, bool *failed) {
  std::deque<int> read_ahead;
  for (size_t i = 1; i < marker.size(); ++i) {
    const int c = ReadByte();
    if (c < 0) {
      *failed = true;
      return false;
    }
    read_ahead.push_back(c);
    if (c != static_cast<unsigned char>(marker[i])) {
      g_keys.pending.insert(g_keys.pending.end(), read_ahead.begin(), read_ahead.end());
      return false;
    }
  }
  return true;
}

// A UTF-8 lead byte's code point, when the locale is multibyte: libedit
// takes wide characters from a custom getc.
int DecodeUtf8(int lead) {
  if (MB_CUR_MAX == 1 || lead < 0xc0) return lead;
  const int more = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : 1;
  int code_point = lead & (0x3f >> more);
  for (int i = 0; i < more; ++i) {
    const int c = ReadByte();
    if (c < 0) return -1;
    code_point = (code_point << 6) | (c & 0x3f);
  }
  return code_point;
}

// rl_getc_function: keys as libedit wants them, with the bracketed-paste
// markers taken out and a pasted newline turned into Ctrl-V + newline, so it
// lands in the line instead of ending it.
int GetKey(FILE *) {
  for (;;) {
    int c;
    if (!g_keys.pending.empty()) {
      c = g_keys.pending.front();
      g_keys.pending.pop_front();
      return c;
    }
    c = ReadByte();
    if (c < 0) return -1;
    if (c == 0x1b) {
      bool failed = false;
      if (ReadMarker(g_keys.in_paste ? kPasteEnd : kPasteStart, &failed)) {
        g_keys.in_paste = !g_keys.in_paste;
        g_keys.after_cr = false;
        continue;
      }
      if (failed) return -1;
      return c;
    }
    if (g_keys.in_paste && (c == '\r' || c == '\n')) {
      const bool crlf = c == '\n' && g_keys.after_cr;
      g_keys.after_cr = c == '\r';
      if (crlf) continue;
      g_keys.pending.push_back('\n');
      return kQuotedInsert;
    }
    g_keys.after_cr = false;
    return c >= 0x80 ? DecodeUtf8(c) : c;
  }
}

// Bracketed paste is asked of the terminal only while we read a line, so
// that the streamed answer and the shell afterwards are left as they were.
bool CanAskForPaste() {
  const char *term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) != 0 && (term == nullptr || absl::string_view(term) != "dumb");
}

absl::string_view StripTrailingSpace(absl::string_view s) {
  return absl::StripTrailingAsciiWhitespace(s);
}

}  // namespace

ChatInputReader::ChatInputReader(bool terminal, CtrlC *ctrl_c)
    : terminal_(terminal), ctrl_c_(ctrl_c) {
  if (terminal_) rl_getc_function = GetKey;
}

std::optional<std::string> ChatInputReader::ReadLine(const char *prompt, bool *interrupted) {
  *interrupted = false;
  if (!terminal_) {
    std::string text;
    if (!std::getline(std::cin, text)) return std::nullopt;
    return text;
  }
  const bool paste = CanAskForPaste();
  if (paste) std::cout << "\x1b[?2004h" << std::flush;
  g_keys = KeyReader();
  char *line = readline(prompt);
  if (paste) std::cout << "\x1b[?2004l" << std::flush;
  if (line == nullptr) {
    *interrupted = ctrl_c_ != nullptr && ctrl_c_->TakePressed();
    return std::nullopt;
  }
  std::string text(line);
  std::free(line);
  if (!absl::StripAsciiWhitespace(text).empty()) add_history(text.c_str());
  return text;
}

ChatInput ChatInputReader::Read() {
  bool interrupted = false;
  std::optional<std::string> line = ReadLine("you> ", &interrupted);
  if (interrupted) return {ChatInput::Kind::kInterrupted, ""};
  if (!line) return {ChatInput::Kind::kEnd, ""};
  std::string text;
  auto next = [&] {
    line = ReadLine("... ", &interrupted);
    return line.has_value();
  };
  absl::string_view first = absl::StripLeadingAsciiWhitespace(*line);
  if (absl::StartsWith(first, kBlock)) {
    // """ block: until a line that ends in """ (the first line may).
    std::string body(first.substr(kBlock.size()));
    bool closed = false;
    for (;;) {  // `body`: the line read last
      absl::string_view trimmed = StripTrailingSpace(body);
      if (absl::EndsWith(trimmed, kBlock)) {
        text += std::string(trimmed.substr(0, trimmed.size() - kBlock.size()));
        closed = true;
        break;
      }
      text += body;
      if (!next()) break;
      text += "\n";
      body = *line;
    }
    if (interrupted) return {ChatInput::Kind::kInterrupted, ""};
    if (!closed && text.empty()) return {ChatInput::Kind::kEnd, ""};
    // A block starts after its opening """ line: drop that line's newline.
    if (absl::StartsWith(text, "\n")) text.erase(0, 1);
    return {ChatInput::Kind::kMessage, text};
  }
  // A trailing backslash continues the message on the next line.
  for (;;) {
    absl::string_view trimmed = StripTrailingSpace(*line);
    if (!absl::EndsWith(trimmed, "\\")) {
      text += *line;
      break;
    }
    text += std::string(trimmed.substr(0, trimmed.size() - 1));
    text += "\n";
    if (!next()) break;
  }
  if (interrupted) return {ChatInput::Kind::kInterrupted, ""};
  return {ChatInput::Kind::kMessage, text};
}

}  // namespace kvserve
