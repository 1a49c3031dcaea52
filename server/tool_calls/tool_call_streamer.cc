#include "server/tool_calls/tool_call_streamer.h"

#include "nlohmann/json.hpp"
#include "server/tool_calls/json_scan.h"

namespace kvserve::tool_calls {
namespace {

// tool_choice "required": the elements of the constrained JSON array closed
// so far. nullopt: not such an array (only an error when `final`).
std::optional<std::vector<FunctionCall>> RequiredCalls(std::string_view text, bool final) {
  std::vector<FunctionCall> calls;
  size_t pos = SkipSpace(text, 0);
  if (pos == text.size()) {
    if (final) return std::nullopt;
    return calls;
  }
  if (text[pos] != '[') return std::nullopt;
  pos = SkipSpace(text, pos + 1);
  bool closed = false;
  while (pos < text.size()) {
    if (text[pos] == ']') {
      closed = true;
      break;
    }
    if (text[pos] != '{') return std::nullopt;
    const size_t end = JsonBracketEnd(text, pos);
    if (end == std::string_view::npos) break;
    std::optional<FunctionCall> call = CallFromJson(text.substr(pos, end - pos));
    if (!call) return std::nullopt;
    calls.push_back(*std::move(call));
    pos = SkipSpace(text, end);
    if (pos < text.size() && text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
  if (final && (!closed || calls.empty() || SkipSpace(text, pos + 1) != text.size())) {
    return std::nullopt;
  }
  return calls;
}

}  // namespace

ToolCallStreamer::ToolCallStreamer(ToolCallPlan plan, std::function<std::string()> new_id)
    : plan_(std::move(plan)), new_id_(std::move(new_id)) {
  if (plan_.mode == ToolCallMode::kParse) {
    parser_ = MakeToolCallParser(plan_.format);
    if (parser_ == nullptr) plan_.mode = ToolCallMode::kOff;  // the model has no format
  }
}

ToolCallStreamer::~ToolCallStreamer() = default;

void ToolCallStreamer::Emit(FunctionCall call, StreamDelta& out) {
  ToolCall& added = calls_.emplace_back(ToolCall{new_id_(), call.name, call.arguments});
  out.calls.push_back(
      {static_cast<int>(calls_.size()) - 1, true, added.id, added.name, added.arguments});
}

void ToolCallStreamer::EmitClosed(const std::vector<FunctionCall>& calls, StreamDelta& out) {
  for (size_t i = calls_.size(); i < calls.size(); ++i) Emit(calls[i], out);
}

StreamDelta ToolCallStreamer::Add(std::string_view text) {
  text_.append(text);
  switch (plan_.mode) {
    case ToolCallMode::kOff: {
      StreamDelta out;
      out.content = std::string(text);
      return out;
    }
    case ToolCallMode::kParse:
      return AddParse(/*final=*/false);
    case ToolCallMode::kRequired:
      return AddRequired(/*final=*/false);
    case ToolCallMode::kNamed:
      break;
  }
  StreamDelta out;
  if (calls_.empty()) {
    calls_.push_back({new_id_(), plan_.function, ""});
    out.calls.push_back({0, true, calls_[0].id, calls_[0].name, ""});
  }
  if (!text.empty()) {
    calls_[0].arguments.append(text);
    out.calls.push_back({0, false, "", "", std::string(text)});
  }
  return out;
}

StreamDelta ToolCallStreamer::Finish() {
  finished_ = true;
  switch (plan_.mode) {
    case ToolCallMode::kOff:
      return {};
    case ToolCallMode::kParse:
      return AddParse(/*final=*/true);
    case ToolCallMode::kRequired:
      return AddRequired(/*final=*/true);
    case ToolCallMode::kNamed:
      break;
  }
  return Add("");  // a call even for an empty output: the client asked for one
}

StreamDelta ToolCallStreamer::AddParse(bool final) {
  StreamDelta out;
  if (section_ == std::string::npos) {
    const CallsStart start = parser_->FindStart(text_);
    size_t content_end = text_.size();
    if (start.pos != std::string_view::npos && (start.certain || !final)) {
      content_end = std::max(start.pos, content_sent_);
      if (start.certain) section_ = content_end;
    }
    out.content = text_.substr(content_sent_, content_end - content_sent_);
    content_sent_ = content_end;
    if (section_ == std::string::npos) return out;
  }
  const std::string_view section = std::string_view(text_).substr(section_);
  std::optional<ParsedCalls> parsed = parser_->Parse(section, final);
  if (parsed) {
    EmitClosed(parsed->calls, out);
    if (final && !parsed->content.empty()) out.content += parsed->content;
  } else if (final) {
    // Malformed: the text is what the model said (calls already streamed stay).
    out.content += std::string(section);
  }
  return out;
}

StreamDelta ToolCallStreamer::AddRequired(bool final) {
  StreamDelta out;
  std::optional<std::vector<FunctionCall>> calls = RequiredCalls(text_, final);
  if (calls) {
    EmitClosed(*calls, out);
  } else if (final) {
    out.content = text_;  // not the array the constraint asked for (e.g. cut by max_tokens)
  }
  return out;
}

ToolCallOutput ParseWholeOutput(const ToolCallPlan& plan, std::string_view text,
                                const std::function<std::string()>& new_id) {
  ToolCallOutput out;
  auto with_ids = [&](const std::vector<FunctionCall>& calls) {
    for (const FunctionCall& c : calls) out.calls.push_back({new_id(), c.name, c.arguments});
  };
  std::unique_ptr<ToolCallParser> parser;
  switch (plan.mode) {
    case ToolCallMode::kNamed:
      out.calls.push_back({new_id(), plan.function, std::string(text)});
      return out;
    case ToolCallMode::kRequired:
      if (auto calls = RequiredCalls(text, /*final=*/true)) {
        with_ids(*calls);
        return out;
      }
      break;
    case ToolCallMode::kParse:
      parser = MakeToolCallParser(plan.format);
      if (parser != nullptr) {
        ParsedOutput parsed = ParseOutput(*parser, text);
        with_ids(parsed.calls);
        out.content = std::move(parsed.content);
        return out;
      }
      break;
    case ToolCallMode::kOff:
      break;
  }
  out.content = std::string(text);
  return out;
}

}  // namespace kvserve::tool_calls
