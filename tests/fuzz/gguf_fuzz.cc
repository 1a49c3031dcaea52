// libFuzzer target: a GGUF image, read from memory as the mmapped file is.
// An accepted file is then used as a model source would use it: the model
// config and the tokenizer from its metadata, and every tensor dequantized
// (small ones only: the fuzzer's memory limit is for the reader, not the data).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/loading/gguf_config.h"
#include "engine/loading/gguf_dequant.h"
#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = kvserve::GgufFile::FromBytes(data, size, "fuzz.gguf");
  if (!file.ok()) return 0;
  (void)kvserve::GgufModelConfig(**file);
  auto tokenizer = kvserve::GgufTokenizer((*file)->metadata());
  if (tokenizer.ok()) {
    auto ids = (*tokenizer)->Encode("Hello, world! 123", /*add_special_tokens=*/true);
    if (ids.ok()) (void)(*tokenizer)->Decode(*ids, /*skip_special_tokens=*/false);
  }
  std::vector<float> values;
  for (const auto& [name, tensor] : (*file)->tensors()) {
    if (tensor.numel() > (1 << 16)) continue;
    values.resize(tensor.numel());
    (void)kvserve::DequantizeGgml(tensor.type, tensor.data, tensor.numel(), values.data());
  }
  return 0;
}
