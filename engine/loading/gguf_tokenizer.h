// The tokenizer of a GGUF file, rebuilt from its tokenizer.ggml.* metadata as
// the tokenizer.json Hugging Face would use for the same model, then parsed
// by HfTokenizer (so GGUF and tokenizer.json models share one encoder).
//
//   gpt2  (byte-level BPE): vocab + merges; the pre-tokenizer comes from
//         tokenizer.ggml.pre (llama-bpe, qwen2, smollm, gpt-2, default, ...),
//         each mapped to the exact pre-tokenizer of that model's tokenizer.json.
//   llama (SentencePiece BPE): vocab + scores; merges ordered by score as
//         transformers' SentencePieceExtractor does, byte_fallback, "▁" for
//         spaces, as transformers' LlamaConverter builds it.
// Details and what is refused: docs/gguf.md.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loading/gguf_metadata.h"
#include "engine/text/hf_tokenizer.h"
#include "nlohmann/json.hpp"

namespace kvserve {

/// The tokenizer.json object for the file's tokenizer metadata.
absl::StatusOr<nlohmann::json> GgufTokenizerJson(const GgufMetadata& metadata);

/// GgufTokenizerJson parsed into a tokenizer.
absl::StatusOr<std::unique_ptr<HfTokenizer>> GgufTokenizer(const GgufMetadata& metadata);

}  // namespace kvserve
