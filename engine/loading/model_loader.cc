#include "engine/loading/model_loader.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "engine/loading/chat_template_file.h"
#include "engine/loading/checkpoint.h"
#include "engine/loading/default_model.h"
#include "engine/loading/gguf_model_source.h"
#include "engine/text/byte_tokenizer.h"
#include "engine/text/hf_tokenizer.h"

namespace kvserve {

absl::StatusOr<ModelSource> OpenModelSource(const std::string& dir) {
  ModelSource source;
  if (dir.empty()) {
    source.name = kDefaultModelName;
    source.config = DefaultModelConfig();
    source.weights = std::make_unique<RandomWeightSource>(source.config, /*seed=*/2024);
    source.tokenizer = std::make_unique<ByteTokenizer>(source.config.vocab_size);
    return source;
  }
  if (IsGgufPath(dir)) return OpenGgufModelSource(dir);
  ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  source.config = checkpoint->config();
  std::filesystem::path path(dir);
  source.name = path.filename().empty() ? path.parent_path().filename().string()
                                        : path.filename().string();
  source.weights = std::move(checkpoint);
  const std::filesystem::path tokenizer_path = path / "tokenizer.json";
  if (std::filesystem::exists(tokenizer_path)) {
    // A tokenizer.json that cannot be reproduced exactly is an error, not a
    // silent fallback: the model would see ids it was not trained with.
    ASSIGN_OR_RETURN(source.tokenizer, HfTokenizer::FromFile(tokenizer_path.string()));
    // Every id the tokenizer can produce must have an embedding row. (The
    // model may have more rows than the tokenizer ids: padded vocabularies.)
    if (source.tokenizer->vocab_size() > source.config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          tokenizer_path.string(), ": the tokenizer has ids up to ",
          source.tokenizer->vocab_size() - 1, " but config.json's vocab_size is ",
          source.config.vocab_size));
    }
    KV_LOG(INFO) << "tokenizer: " << source.tokenizer->Describe();
  } else {
    KV_LOG(WARNING) << dir << " has no tokenizer.json: this model accepts token_ids input only";
  }
  ASSIGN_OR_RETURN(source.chat_template, ReadChatTemplate(dir));
  return source;
}

}  // namespace kvserve
