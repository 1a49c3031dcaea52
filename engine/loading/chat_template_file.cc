#include "engine/loading/chat_template_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using Json = nlohmann::json;

std::optional<std::string> ReadWhole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// `bos_token` / `eos_token`: absent, null, a string, or {"content": "..."}.
absl::StatusOr<std::optional<std::string>> SpecialToken(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tokenizer_config.json: ", key, " must be a string or an object with a string \"content\""));
}

// `chat_template`: a string, or [{"name": ..., "template": ...}, ...].
absl::StatusOr<std::optional<std::string>> TemplateField(const Json& config) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return absl::InvalidArgumentError(
        "tokenizer_config.json: chat_template must be a string or a list of "
        "{\"name\", \"template\"} objects");
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& entry = (*it)[i];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokenizer_config.json: chat_template[", i,
          "] must be an object with string \"name\" and \"template\""));
    }
    const std::string name = entry["name"].get<std::string>();
    if (name == "default") return entry["template"].get<std::string>();
    names.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tokenizer_config.json: chat_template lists ", names.size(),
      " named templates but none named \"default\""));
}

}  // namespace

absl::StatusOr<std::optional<ChatTemplateSource>> ReadChatTemplate(const std::string& dir) {
  const std::filesystem::path root(dir);
  ChatTemplateSource source;
  bool found = false;

  const std::filesystem::path config_path = root / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    std::optional<std::string> text = ReadWhole(config_path);
    if (!text) return absl::InvalidArgumentError(absl::StrCat("cannot read ", config_path.string()));
    Json config = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config_path.string(), ": not a JSON object"));
    }
    auto bos = SpecialToken(config, "bos_token");
    if (!bos.ok()) return bos.status();
    auto eos = SpecialToken(config, "eos_token");
    if (!eos.ok()) return eos.status();
    source.bos_token = *bos;
    source.eos_token = *eos;
    auto tmpl = TemplateField(config);
    if (!tmpl.ok()) return tmpl.status();
    if (*tmpl) {
      source.text = **tmpl;
      source.origin = "tokenizer_config.json";
      found = true;
    }
  }

  const std::filesystem::path jinja_path = root / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) {
    std::optional<std::string> text = ReadWhole(jinja_path);
    if (!text) return absl::InvalidArgumentError(absl::StrCat("cannot read ", jinja_path.string()));
    source.text = *std::move(text);
    source.origin = "chat_template.jinja";
    found = true;
  }
  if (!found) return std::nullopt;
  return source;
}

absl::StatusOr<std::string> ReadChatTemplateFile(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--chat_template: ", path, " is not a readable file"));
  }
  std::optional<std::string> text = ReadWhole(path);
  if (!text) {
    return absl::InvalidArgumentError(absl::StrCat("--chat_template: cannot read ", path));
  }
  return *std::move(text);
}

}  // namespace kvserve
