// A GGUF file (llama.cpp's format, versions 2 and 3), memory-mapped and
// validated before any tensor data is touched: every length, count, offset
// and alignment is checked against the file size, so a truncated or hostile
// file is refused with a message, never a crash or an out-of-bounds read.
//
// Layout: "GGUF", version u32, tensor_count u64, kv_count u64, the key-value
// metadata, the tensor infos (name, dims innermost first, ggml type, offset),
// padding to `general.alignment` (default 32), then the data section; tensor
// offsets are relative to it and aligned. All little-endian.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loading/gguf_metadata.h"

namespace kvserve {

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length (innermost)
  uint32_t type = 0;          // GgmlType id
  uint64_t offset = 0;        // within the data section
  uint64_t bytes = 0;         // numel / block_size * type_size
  const uint8_t* data = nullptr;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

class GgufFile {
 public:
  /// Maps and validates `path`.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  /// Validates an in-memory image (borrowed; used by Open and by tests).
  static absl::StatusOr<std::unique_ptr<GgufFile>> FromBytes(const uint8_t* data, size_t size,
                                                             std::string name);
  /// Whether the first bytes are the GGUF magic.
  static bool HasMagic(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const std::map<std::string, GgufTensorInfo, std::less<>>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(absl::string_view name) const;
  const std::string& name() const { return name_; }
  size_t file_bytes() const { return size_; }
  /// Drops the mapped pages that lie wholly inside [data, data + bytes) from
  /// this process's resident set (madvise MADV_DONTNEED: a read-only private
  /// mapping reads them again from the page cache if touched). For tensors
  /// that were copied out, so that the copy is not resident twice.
  void ReleasePages(const void* data, size_t bytes) const;

 private:
  explicit GgufFile(std::string name) : name_(name), metadata_(std::move(name)) {}

  std::string name_;
  GgufMetadata metadata_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // owned mmap, or nullptr for FromBytes
  std::map<std::string, GgufTensorInfo, std::less<>> tensors_;
};

}  // namespace kvserve
