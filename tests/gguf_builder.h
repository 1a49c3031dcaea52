// Writes GGUF v3 images in memory for tests: good files built from parts,
// which tests then corrupt byte by byte; and llama.cpp's conventions (its
// Q/K permute, its Llama 3 rope_freqs, llama metadata) for writing models.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "gtest/gtest.h"

namespace kvserve::testing {

class GgufBuilder {
 public:
  void String(const std::string& key, const std::string& v) { Key(key, 8); Str(v); ++kv_; }
  void U32(const std::string& key, uint32_t v) { Key(key, 4); Pod(v); ++kv_; }
  void I32(const std::string& key, int32_t v) { Key(key, 5); Pod(v); ++kv_; }
  void F32(const std::string& key, float v) { Key(key, 6); Pod(v); ++kv_; }
  void Bool(const std::string& key, bool v) { Key(key, 7); Pod(uint8_t{v}); ++kv_; }
  void StringArray(const std::string& key, const std::vector<std::string>& v) {
    Key(key, 9); Pod(uint32_t{8}); Pod(uint64_t(v.size()));
    for (const std::string& s : v) Str(s);
    ++kv_;
  }
  void F32Array(const std::string& key, const std::vector<float>& v) {
    Key(key, 9); Pod(uint32_t{6}); Pod(uint64_t(v.size()));
    for (float f : v) Pod(f);
    ++kv_;
  }
  void I32Array(const std::string& key, const std::vector<int32_t>& v) {
    Key(key, 9); Pod(uint32_t{5}); Pod(uint64_t(v.size()));
    for (int32_t i : v) Pod(i);
    ++kv_;
  }
  /// `dims` in ggml order (row length first); `data` is the tensor's bytes.
  void Tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::string data) {
    tensors_.push_back({name, std::move(dims), type, std::move(data)});
  }

  std::string Build(uint64_t alignment = 32) const {
    std::string out = "GGUF";
    Append(out, uint32_t{3});
    Append(out, uint64_t(tensors_.size()));
    Append(out, uint64_t(kv_));
    out += kv_bytes_;
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors_) {
      Append(out, uint64_t(t.name.size()));
      out += t.name;
      Append(out, uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) Append(out, d);
      Append(out, t.type);
      Append(out, offset);
      offsets.push_back(offset);
      offset = (offset + t.data.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    const size_t data_start = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(data_start + offsets[i], '\0');
      out += tensors_[i].data;
    }
    return out;
  }

  template <typename T>
  static void Append(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
  };
  void Key(const std::string& key, uint32_t type) { Str(key); Pod(type); }
  void Str(const std::string& s) { Pod(uint64_t(s.size())); kv_bytes_ += s; }
  template <typename V>
  void Pod(V v) { Append(kv_bytes_, v); }

  std::string kv_bytes_;
  uint64_t kv_ = 0;
  std::vector<T> tensors_;
};

/// Float32 values as tensor bytes.
inline std::string F32Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

/// llama.cpp's convert_hf_to_gguf.py permute(): reshape(n_head, 2, D/2, cols).swapaxes(1, 2).
inline std::vector<float> LlamaCppPermute(const std::vector<float>& w, int64_t rows, int64_t cols,
                                          int n_head) {
  std::vector<float> out(w.size());
  const int64_t d = rows / n_head;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < d / 2; ++i)
        std::copy_n(&w[(h * d + j * d / 2 + i) * cols], cols, &out[(h * d + 2 * i + j) * cols]);
  return out;
}

/// Metadata for a llama model of `c`'s shape with a SentencePiece vocabulary
/// of `vocab` tokens: <unk> <s> </s>, the 256 byte tokens, then pieces.
inline void AddLlamaMetadata(GgufBuilder& b, const ModelConfig& c, int vocab,
                             const std::string& tokenizer_model = "llama") {
  b.String("general.architecture", "llama");
  b.U32("llama.block_count", c.num_layers);
  b.U32("llama.context_length", c.max_context);
  b.U32("llama.embedding_length", c.hidden_size);
  b.U32("llama.feed_forward_length", c.intermediate_size);
  b.U32("llama.attention.head_count", c.num_heads);
  b.U32("llama.attention.head_count_kv", c.num_kv_heads);
  b.U32("llama.attention.key_length", c.head_dim);
  b.U32("llama.rope.dimension_count", c.head_dim);
  b.F32("llama.rope.freq_base", static_cast<float>(c.rope_theta));
  b.F32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    tokens.push_back(name);
    types.push_back(6);
  }
  const std::string letters = "abcdefghijklmnopqrstuvwxyz";
  for (size_t i = 0; tokens.size() < static_cast<size_t>(vocab); ++i) {
    std::string piece;
    if (i < letters.size()) {
      piece.push_back(letters[i]);
    } else {
      piece = "\xE2\x96\x81";  // "▁" + two letters
      piece.push_back(letters[i % 26]);
      piece.push_back(letters[(i / 26) % 26]);
    }
    tokens.push_back(piece);
    types.push_back(1);
  }
  std::vector<float> scores;
  for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(-static_cast<float>(i));
  b.String("tokenizer.ggml.model", tokenizer_model);
  b.StringArray("tokenizer.ggml.tokens", tokens);
  b.F32Array("tokenizer.ggml.scores", scores);
  b.I32Array("tokenizer.ggml.token_type", types);
  b.U32("tokenizer.ggml.bos_token_id", 1);
  b.U32("tokenizer.ggml.eos_token_id", 2);
  b.U32("tokenizer.ggml.unknown_token_id", 0);
}

/// convert_hf_to_gguf.py's rope_freqs for Llama 3 scaling (float32 frequencies).
inline std::vector<float> LlamaCppRopeFactors(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const double old_len = r.original_max_position_embeddings;
  std::vector<float> factors;
  for (int i = 0; i < c.head_dim / 2; ++i) {
    const float freq = 1.0f / std::pow(static_cast<float>(c.rope_theta),
                                       static_cast<float>(2 * i) / c.head_dim);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < old_len / r.high_freq_factor) {
      factors.push_back(1.f);
    } else if (wavelen > old_len / r.low_freq_factor) {
      factors.push_back(static_cast<float>(r.factor));
    } else {
      const double smooth = (old_len / wavelen - r.low_freq_factor) /
                            (r.high_freq_factor - r.low_freq_factor);
      factors.push_back(static_cast<float>(1 / ((1 - smooth) / r.factor + smooth)));
    }
  }
  return factors;
}

/// Writes `bytes` to a file under the test temp dir; returns its path.
inline std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

}  // namespace kvserve::testing
