// kvserve-render-template: renders a chat template file with kvserve's Jinja
// interpreter.
//
//   kvserve-render-template TEMPLATE [CONTEXT]          one render
//   kvserve-render-template --batch TEMPLATE [CONTEXTS] many renders
//
// CONTEXT is a JSON object of template variables (a file, or stdin when absent
// or "-"). One render prints the text to stdout, or the error to stderr with
// exit status 1. --batch reads a JSON array of contexts and prints a JSON
// array of results, {"text": ...} or {"error": ..., "exception": bool}, so a
// differential test can check many conversations with one process.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/text/chat_template/chat_template.h"
#include "nlohmann/json.hpp"

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    *out = ss.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

int Usage() {
  std::cerr << "usage: kvserve-render-template [--batch] TEMPLATE [CONTEXT_JSON|-]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int arg = 1;
  bool batch = false;
  if (arg < argc && std::string(argv[arg]) == "--batch") {
    batch = true;
    ++arg;
  }
  if (arg >= argc || argc - arg > 2) return Usage();
  std::string template_path = argv[arg];
  std::string context_path = arg + 1 < argc ? argv[arg + 1] : "-";

  std::string source, context_text;
  if (!ReadFile(template_path, &source)) {
    std::cerr << "cannot read template " << template_path << "\n";
    return 1;
  }
  if (!ReadFile(context_path, &context_text)) {
    std::cerr << "cannot read context " << context_path << "\n";
    return 1;
  }
  nlohmann::ordered_json contexts = nlohmann::ordered_json::parse(context_text, nullptr, false);
  if (contexts.is_discarded()) {
    std::cerr << "context is not valid JSON\n";
    return 1;
  }
  absl::StatusOr<kvserve::ChatTemplate> tmpl = kvserve::ChatTemplate::Parse(source);

  if (!batch) {
    if (!tmpl.ok()) {
      std::cerr << tmpl.status().message() << "\n";
      return 1;
    }
    absl::StatusOr<std::string> text = tmpl->Render(contexts);
    if (!text.ok()) {
      std::cerr << text.status().message() << "\n";
      return 1;
    }
    std::cout << *text;
    return 0;
  }

  if (!contexts.is_array()) {
    std::cerr << "--batch needs a JSON array of contexts\n";
    return 1;
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& context : contexts) {
    nlohmann::ordered_json result;
    if (!tmpl.ok()) {
      result["error"] = std::string(tmpl.status().message());
      result["exception"] = false;
    } else if (absl::StatusOr<std::string> text = tmpl->Render(context); text.ok()) {
      result["text"] = *text;
    } else {
      result["error"] = std::string(text.status().message());
      result["exception"] = kvserve::IsTemplateException(text.status());
    }
    results.push_back(std::move(result));
  }
  // Invalid UTF-8 in a render is replaced rather than aborting the dump.
  std::cout << results.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  return 0;
}
