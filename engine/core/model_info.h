// What the engine serves, as GetModelInfo reports it and validation uses it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/sampling_defaults.h"

namespace kvserve {

struct ModelInfo {
  std::string model_name;
  std::string architecture;
  int vocab_size = 0;
  int max_context = 0;
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  int kv_block_size = 0;
  int kv_num_blocks = 0;
  bool has_tokenizer = false;
  std::string device;
  std::string dtype;        // the compute dtype (CPU weight matrices may be stored smaller)
  uint64_t weight_bytes = 0;  // device bytes of the weights as stored
  uint32_t default_max_new_tokens = 0;
  /// Fast GPU kernels that disagreed with their reference at start-up and
  /// were replaced by it (Backend::KernelFallbacks); empty when all agree.
  std::vector<std::string> kernel_fallbacks;
  /// What the model recommends; the HTTP API fills a request's missing fields from it.
  SamplingDefaults sampling_defaults;
};

}  // namespace kvserve
