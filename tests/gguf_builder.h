// Writes GGUF v3 images in memory for tests: good files built from parts,
// which tests then corrupt byte by byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kvserve::testing {

class GgufBuilder {
 public:
  void String(const std::string& key, const std::string& v) { Key(key, 8); Str(v); ++kv_; }
  void U32(const std::string& key, uint32_t v) { Key(key, 4); Pod(v); ++kv_; }
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

}  // namespace kvserve::testing
