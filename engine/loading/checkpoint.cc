#include "engine/loading/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadTextFile(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
  if (size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", size, " bytes is more than the ",
                                                   max_bytes, " allowed"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

namespace {

// Shard file names listed by model.safetensors.index.json's weight_map.
absl::StatusOr<std::vector<std::string>> ReadShardList(const std::string& index_path) {
  ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
      !j["weight_map"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(index_path, ": not a safetensors index (no \"weight_map\" object)"));
  }
  std::set<std::string> shards;
  for (auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(index_path, ": weight_map[\"", tensor,
                                                     "\"] is not a file name"));
    }
    const std::string shard = file.get<std::string>();
    // Shards live in the checkpoint directory itself: no paths, no escapes.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": shard name \"", shard, "\" is not a plain file name"));
    }
    shards.insert(shard);
  }
  return std::vector<std::string>(shards.begin(), shards.end());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat("--model: ", dir, " is not a directory"));
  }
  auto ckpt = std::make_unique<Checkpoint>();
  ckpt->dir_ = dir;
  ASSIGN_OR_RETURN(std::string config_text, ReadTextFile((fs::path(dir) / "config.json").string()));
  absl::StatusOr<ModelConfig> config = ParseModelConfig(config_text);
  if (!config.ok()) {
    return absl::Status(config.status().code(), absl::StrCat(dir, "/", config.status().message()));
  }
  ckpt->config_ = *std::move(config);
  const fs::path generation = fs::path(dir) / "generation_config.json";
  if (fs::exists(generation)) {
    ASSIGN_OR_RETURN(std::string text, ReadTextFile(generation.string()));
    RETURN_IF_ERROR(MergeGenerationConfig(text, ckpt->config_));
  }

  std::vector<std::string> shard_files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    ASSIGN_OR_RETURN(shard_files, ReadShardList(index.string()));
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    shard_files.push_back("model.safetensors");
  } else {
    return absl::NotFoundError(absl::StrCat(
        dir, ": no model.safetensors or model.safetensors.index.json (only safetensors "
             "checkpoints are supported)"));
  }
  for (const std::string& shard : shard_files) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((fs::path(dir) / shard).string()));
    for (const auto& [name, data] : file->tensors()) {
      if (!ckpt->index_.emplace(name, &data).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(dir, ": tensor \"", name, "\" appears in more than one shard"));
      }
    }
    ckpt->files_.push_back(std::move(file));
  }
  return ckpt;
}

bool Checkpoint::Has(absl::string_view name) const { return index_.find(name) != index_.end(); }

absl::StatusOr<TensorData> Checkpoint::Get(absl::string_view name) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(absl::StrCat(dir_, ": checkpoint has no tensor \"", name, "\""));
  }
  return *it->second;
}

}  // namespace kvserve
