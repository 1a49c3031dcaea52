#include "engine/loading/gguf_model_source.h"

#include <chrono>
#include <filesystem>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "engine/loading/ggml_types.h"
#include "engine/loading/gguf_config.h"
#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_tokenizer.h"
#include "engine/loading/gguf_weights.h"

namespace kvserve {

bool IsGgufPath(const std::string& path) {
  // A missing x.gguf is still meant as GGUF: its error should say "no such file".
  if (absl::EndsWithIgnoreCase(path, ".gguf")) return true;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && GgufFile::HasMagic(path);
}

absl::StatusOr<ModelSource> OpenGgufModelSource(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  // Refuse unsupported tensor types up front, by name, before any work.
  std::map<std::string, int> type_counts;
  for (const auto& [name, t] : file->tensors()) {
    const std::optional<GgmlTypeInfo> info = LookupGgmlType(t.type);
    if (!info || !info->supported) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor ", name, " has ggml type ", GgmlTypeName(t.type),
          ", which kvserve does not dequantize (supported: ", SupportedGgmlTypeNames(), ")"));
    }
    ++type_counts[info->name];
  }
  // llama.cpp's gguf-split shards: each file holds only some tensors.
  if (const GgufValue* split = file->metadata().Find("split.count");
      split != nullptr && split->is_integer() && (split->u > 1 || split->i > 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a shard of a split GGUF model (split.count > 1); merge it into one file with "
              "llama-gguf-split --merge"));
  }
  ModelSource source;
  ASSIGN_OR_RETURN(source.config, GgufModelConfig(*file));
  source.name = std::filesystem::path(path).stem().string();

  absl::StatusOr<std::unique_ptr<HfTokenizer>> tokenizer = GgufTokenizer(file->metadata());
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(path, ": ", tokenizer.status().message()));
  }
  if ((*tokenizer)->vocab_size() > source.config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the tokenizer has ids up to ", (*tokenizer)->vocab_size() - 1,
        " but token_embd.weight has ", source.config.vocab_size, " rows"));
  }
  const GgufMetadata& md = file->metadata();
  if (md.Has("tokenizer.chat_template")) {
    ChatTemplateSource chat;
    ASSIGN_OR_RETURN(chat.text, md.GetString("tokenizer.chat_template"));
    chat.origin = "gguf";
    if (source.config.bos_token_id) {
      if (const std::string* s = (*tokenizer)->IdToToken(*source.config.bos_token_id)) chat.bos_token = *s;
    }
    if (!source.config.eos_token_ids.empty()) {
      if (const std::string* s = (*tokenizer)->IdToToken(source.config.eos_token_ids[0])) {
        chat.eos_token = *s;
      }
    }
    source.chat_template = std::move(chat);
  }
  source.tokenizer = *std::move(tokenizer);

  std::string types;
  for (const auto& [name, count] : type_counts) absl::StrAppend(&types, types.empty() ? "" : ", ", count, " ", name);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  KV_LOG(INFO) << path << ": GGUF v" << file->version() << ", " << md.GetString("general.architecture").value_or("?")
               << ", " << file->file_bytes() / (1 << 20) << " MiB mapped, " << file->tensors().size()
               << " tensors (" << types << "); tokenizer " << source.tokenizer->Describe()
               << (source.chat_template ? ", chat template" : ", no chat template")
               << "; opened in " << seconds << " s";
  source.weights = std::make_unique<GgufWeightSource>(std::shared_ptr<const GgufFile>(std::move(file)),
                                                      source.config);
  return source;
}

}  // namespace kvserve
