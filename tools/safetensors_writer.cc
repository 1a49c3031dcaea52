#include "tools/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

constexpr int64_t kChunkElems = int64_t(1) << 20;

const char* SafetensorsDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "F32";
    case DType::kFloat16: return "F16";
    case DType::kBFloat16: return "BF16";
    case DType::kInt32: return "I32";
    default: break;  // the block formats are not safetensors dtypes
  }
  return "?";
}

int64_t Numel(const TensorToWrite& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

int64_t Bytes(const TensorToWrite& t) { return Numel(t) * static_cast<int64_t>(DTypeSize(t.dtype)); }

absl::Status WriteFile(const std::string& path, const std::vector<const TensorToWrite*>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  int64_t offset = 0;
  for (const TensorToWrite* t : tensors) {
    header[t->name] = {{"dtype", SafetensorsDType(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + Bytes(*t)}}};
    offset += Bytes(*t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  uint64_t length = text.size();
  char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  out.write(length_bytes, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<float> chunk;
  std::vector<char> converted;
  for (const TensorToWrite* t : tensors) {
    const int64_t n = Numel(*t);
    for (int64_t begin = 0; begin < n; begin += kChunkElems) {
      const int64_t count = std::min(kChunkElems, n - begin);
      chunk.resize(count);
      t->fill(begin, count, chunk.data());
      converted.resize(count * DTypeSize(t->dtype));
      RETURN_IF_ERROR(ConvertFromFloat32(chunk.data(), count, t->dtype, converted.data()));
      out.write(converted.data(), static_cast<std::streamsize>(converted.size()));
    }
  }
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("write failed: ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSafetensors(const std::string& dir, const std::vector<TensorToWrite>& tensors,
                              int64_t max_shard_bytes) {
  namespace fs = std::filesystem;
  std::vector<std::vector<const TensorToWrite*>> shards(1);
  int64_t shard_bytes = 0, total_bytes = 0;
  for (const TensorToWrite& t : tensors) {
    if (max_shard_bytes > 0 && shard_bytes > 0 && shard_bytes + Bytes(t) > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&t);
    shard_bytes += Bytes(t);
    total_bytes += Bytes(t);
  }
  if (shards.size() == 1) return WriteFile((fs::path(dir) / "model.safetensors").string(), shards[0]);
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total_bytes}};
  index["weight_map"] = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file =
        absl::StrFormat("model-%05d-of-%05d.safetensors", int(i + 1), int(shards.size()));
    RETURN_IF_ERROR(WriteFile((fs::path(dir) / file).string(), shards[i]));
    for (const TensorToWrite* t : shards[i]) index["weight_map"][t->name] = file;
  }
  std::ofstream out(fs::path(dir) / "model.safetensors.index.json");
  out << index.dump(2) << "\n";
  if (!out) return absl::UnavailableError("cannot write model.safetensors.index.json");
  return absl::OkStatus();
}

}  // namespace kvserve
