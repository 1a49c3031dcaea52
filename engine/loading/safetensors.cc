#include "engine/loading/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace kvserve {
namespace {

using Json = nlohmann::json;

// A header beyond this is not a real checkpoint (real ones are a few MB at most).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status Corrupt(const std::string& name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": invalid safetensors file: ", what));
}

absl::StatusOr<DType> ParseSafetensorsDType(const std::string& name, const std::string& tensor,
                                            const std::string& dtype) {
  if (dtype == "F32") return DType::kFloat32;
  if (dtype == "F16") return DType::kFloat16;
  if (dtype == "BF16") return DType::kBFloat16;
  return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" has dtype ", dtype,
                                    " (supported: F32, F16, BF16)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat(path, ": fstat: ", std::strerror(errno)));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return Corrupt(path, absl::StrCat("file of ", size, " bytes is shorter than the 8-byte header length"));
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": mmap: ", std::strerror(errno)));
  }
  auto parsed = FromBytes(static_cast<const uint8_t*>(mapping), size, path);
  if (!parsed.ok()) {
    ::munmap(mapping, size);
    return parsed.status();
  }
  (*parsed)->mapping_ = mapping;
  (*parsed)->mapping_size_ = size;
  return parsed;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::FromBytes(const uint8_t* data,
                                                                             size_t size,
                                                                             std::string name) {
  if (size < 8) return Corrupt(name, "shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
  if (header_len > kMaxHeaderBytes) {
    return Corrupt(name, absl::StrCat("header length ", header_len, " exceeds ", kMaxHeaderBytes));
  }
  if (header_len > size - 8) {
    return Corrupt(name, absl::StrCat("header length ", header_len, " runs past the end of the ",
                                      size, "-byte file (truncated?)"));
  }
  const char* header = reinterpret_cast<const char*>(data + 8);
  Json j = Json::parse(header, header + header_len, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(name, "header is not a JSON object");

  const uint8_t* data_section = data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->name_ = name;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& tensor = it.key();
    if (tensor == "__metadata__") continue;
    const Json& entry = it.value();
    if (!entry.is_object()) return Corrupt(name, absl::StrCat("entry \"", tensor, "\" is not an object"));
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || !dtype_it->is_string() || shape_it == entry.end() ||
        !shape_it->is_array() || offsets_it == entry.end() || !offsets_it->is_array() ||
        offsets_it->size() != 2) {
      return Corrupt(name, absl::StrCat("entry \"", tensor, "\" needs dtype, shape and data_offsets"));
    }
    TensorData td;
    ASSIGN_OR_RETURN(td.dtype, ParseSafetensorsDType(name, tensor, dtype_it->get<std::string>()));
    // Element count with overflow checks: a huge claimed shape must not wrap.
    uint64_t numel = 1;
    for (const Json& d : *shape_it) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) {
        return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" has a bad dimension"));
      }
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > (uint64_t{1} << 62) / dim) {
        return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" claims an impossible size"));
      }
      numel *= dim;
      td.shape.push_back(static_cast<int64_t>(dim));
    }
    const Json& b = (*offsets_it)[0];
    const Json& e = (*offsets_it)[1];
    if (!b.is_number_unsigned() || !e.is_number_unsigned()) {
      return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" has non-integer data_offsets"));
    }
    const uint64_t begin = b.get<uint64_t>(), end = e.get<uint64_t>();
    if (begin > end || end > data_size) {
      return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" data_offsets [", begin, ", ", end,
                                        ") are outside the ", data_size, "-byte data section"));
    }
    const uint64_t expected = numel * DTypeSize(td.dtype);
    if (end - begin != expected) {
      return Corrupt(name, absl::StrCat("tensor \"", tensor, "\" spans ", end - begin,
                                        " bytes but its dtype and shape need ", expected));
    }
    td.data = data_section + begin;
    td.bytes = static_cast<size_t>(expected);
    ranges.emplace_back(begin, end);
    file->tensors_.emplace(tensor, std::move(td));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return Corrupt(name, absl::StrCat("tensors overlap at byte ", ranges[i].first));
    }
  }
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
}

}  // namespace kvserve
