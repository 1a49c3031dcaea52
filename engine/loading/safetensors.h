// Memory-mapped safetensors files, with every header entry validated before
// any tensor data is touched: a truncated or malicious file is an error, never
// a crash or an out-of-bounds read.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...},
// then the data section; offsets are relative to its start.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/weight_source.h"
#include "kernels/dtype.h"

namespace kvserve {

/// A tensor inside a mapped file: valid while its SafetensorsFile lives.

class SafetensorsFile {
 public:
  /// Maps and validates `path`.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  /// Validates an in-memory image (used by Open and by tests of bad headers).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> FromBytes(const uint8_t* data,
                                                                    size_t size,
                                                                    std::string name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorData>& tensors() const { return tensors_; }
  const std::string& name() const { return name_; }

 private:
  SafetensorsFile() = default;

  std::string name_;
  void* mapping_ = nullptr;  // owned mmap, or nullptr for FromBytes
  size_t mapping_size_ = 0;
  std::map<std::string, TensorData> tensors_;
};

}  // namespace kvserve
