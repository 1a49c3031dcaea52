// kvserve-tokenize-tool TOKENIZER_JSON: runs kvserve's Hugging Face tokenizer
// over JSON lines on stdin, one JSON line out per line in, for the
// differential test against Python `tokenizers` (tests/tokenizer_diff_test.py).
//
//   {"encode": "text", "add_special_tokens": true}  →  {"ids": [...]}
//   {"decode": [ids], "skip_special_tokens": false}  →  {"text": "..."}
//   anything that fails                              →  {"error": "..."}
#include <iostream>
#include <string>

#include "engine/text/hf_tokenizer.h"
#include "nlohmann/json.hpp"

namespace {

nlohmann::json Handle(const kvserve::HfTokenizer& tokenizer, const std::string& line) {
  const nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
  if (request.is_discarded() || !request.is_object()) return {{"error", "bad request line"}};
  if (request.contains("encode") && request["encode"].is_string()) {
    const bool add_special = request.value("add_special_tokens", false);
    const auto ids = tokenizer.Encode(request["encode"].get<std::string>(), add_special);
    if (!ids.ok()) return {{"error", std::string(ids.status().message())}};
    return {{"ids", *ids}};
  }
  if (request.contains("decode") && request["decode"].is_array()) {
    std::vector<int32_t> ids;
    for (const auto& id : request["decode"]) {
      if (!id.is_number_integer()) return {{"error", "ids must be integers"}};
      ids.push_back(id.get<int32_t>());
    }
    return {{"text", tokenizer.Decode(ids, request.value("skip_special_tokens", false))}};
  }
  return {{"error", "expected \"encode\" or \"decode\""}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " TOKENIZER_JSON < requests.jsonl\n";
    return 2;
  }
  auto tokenizer = kvserve::HfTokenizer::FromFile(argv[1]);
  if (!tokenizer.ok()) {
    std::cerr << tokenizer.status() << "\n";
    return 1;
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::cout << Handle(**tokenizer, line).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace)
              << "\n";
  }
  return 0;
}
