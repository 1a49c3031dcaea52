// libFuzzer target: a safetensors image (8-byte header length, JSON header,
// data section). Every malformed image must be an error; an accepted one must
// have every tensor's bytes inside the image.
#include <cstddef>
#include <cstdint>

#include "engine/loading/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = kvserve::SafetensorsFile::FromBytes(data, size, "fuzz.safetensors");
  if (!file.ok()) return 0;
  for (const auto& [name, tensor] : (*file)->tensors()) {
    // Reading the first and last byte: ASan flags a tensor that escapes the image.
    if (tensor.bytes > 0) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.data);
      volatile uint8_t first = bytes[0];
      volatile uint8_t last = bytes[tensor.bytes - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
