#include "engine/loading/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/loading/ggml_types.h"

namespace kvserve {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
// ggml's limits: GGML_MAX_DIMS, and names far beyond GGML_MAX_NAME (64) are corrupt.
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxNameBytes = 1024;
constexpr int kMaxArrayDepth = 4;

absl::Status Corrupt(const std::string& name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": invalid GGUF file: ", what));
}

// Bounds-checked little-endian cursor over the file image.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& name)
      : data_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  absl::Status Need(uint64_t n, absl::string_view what) const {
    if (n > remaining()) {
      return Corrupt(name_, absl::StrCat(what, " needs ", n, " bytes at offset ", pos_, " but only ",
                                         remaining(), " remain (truncated?)"));
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    RETURN_IF_ERROR(Need(sizeof(T), what));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // x86-64 and aarch64 are little-endian
    pos_ += sizeof(T);
    return v;
  }

  absl::StatusOr<std::string> ReadString(absl::string_view what, uint64_t max_bytes) {
    ASSIGN_OR_RETURN(uint64_t len, Read<uint64_t>(what));
    if (len > max_bytes) {
      return Corrupt(name_, absl::StrCat(what, " at offset ", pos_ - 8, " claims ", len,
                                         " bytes, more than the ", max_bytes, " allowed"));
    }
    RETURN_IF_ERROR(Need(len, what));
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

// Smallest encoding of one value of `type`, to bound array counts by the bytes left.
uint64_t MinValueBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kString: case GgufValueType::kUint64: case GgufValueType::kInt64:
    case GgufValueType::kFloat64: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 1;
}

absl::StatusOr<GgufValue> ReadValue(Reader& r, GgufValueType type, const std::string& key,
                                    const std::string& name, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::kUint8: { ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(key)); v.u = x; break; }
    case GgufValueType::kInt8: { ASSIGN_OR_RETURN(int8_t x, r.Read<int8_t>(key)); v.i = x; break; }
    case GgufValueType::kUint16: { ASSIGN_OR_RETURN(uint16_t x, r.Read<uint16_t>(key)); v.u = x; break; }
    case GgufValueType::kInt16: { ASSIGN_OR_RETURN(int16_t x, r.Read<int16_t>(key)); v.i = x; break; }
    case GgufValueType::kUint32: { ASSIGN_OR_RETURN(uint32_t x, r.Read<uint32_t>(key)); v.u = x; break; }
    case GgufValueType::kInt32: { ASSIGN_OR_RETURN(int32_t x, r.Read<int32_t>(key)); v.i = x; break; }
    case GgufValueType::kUint64: { ASSIGN_OR_RETURN(v.u, r.Read<uint64_t>(key)); break; }
    case GgufValueType::kInt64: { ASSIGN_OR_RETURN(v.i, r.Read<int64_t>(key)); break; }
    case GgufValueType::kFloat32: { ASSIGN_OR_RETURN(float x, r.Read<float>(key)); v.f = x; break; }
    case GgufValueType::kFloat64: { ASSIGN_OR_RETURN(v.f, r.Read<double>(key)); break; }
    case GgufValueType::kBool: {
      ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(key));
      if (x > 1) return Corrupt(name, absl::StrCat("metadata \"", key, "\": bool value ", int{x}));
      v.b = x != 0;
      break;
    }
    case GgufValueType::kString: { ASSIGN_OR_RETURN(v.s, r.ReadString(key, r.remaining())); break; }
    case GgufValueType::kArray: {
      if (depth >= kMaxArrayDepth) {
        return Corrupt(name, absl::StrCat("metadata \"", key, "\": arrays nested deeper than ",
                                          kMaxArrayDepth));
      }
      ASSIGN_OR_RETURN(uint32_t elem, r.Read<uint32_t>(key));
      if (elem > static_cast<uint32_t>(GgufValueType::kFloat64)) {
        return Corrupt(name, absl::StrCat("metadata \"", key, "\": unknown array element type ", elem));
      }
      v.elem_type = static_cast<GgufValueType>(elem);
      ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>(key));
      if (count > r.remaining() / MinValueBytes(v.elem_type)) {
        return Corrupt(name, absl::StrCat("metadata \"", key, "\": array of ", count, " ",
                                          GgufValueTypeName(v.elem_type), " values cannot fit in the ",
                                          r.remaining(), " bytes left"));
      }
      v.items.reserve(count);
      for (uint64_t k = 0; k < count; ++k) {
        ASSIGN_OR_RETURN(GgufValue item, ReadValue(r, v.elem_type, key, name, depth + 1));
        v.items.push_back(std::move(item));
      }
      break;
    }
    default:
      return Corrupt(name, absl::StrCat("metadata \"", key, "\": unknown value type ",
                                        static_cast<uint32_t>(type)));
  }
  return v;
}

absl::StatusOr<GgufTensorInfo> ReadTensorInfo(Reader& r, const std::string& name) {
  GgufTensorInfo t;
  ASSIGN_OR_RETURN(t.name, r.ReadString("tensor name", kMaxNameBytes));
  const std::string what = absl::StrCat("tensor \"", t.name, "\"");
  ASSIGN_OR_RETURN(uint32_t n_dims, r.Read<uint32_t>(what));
  if (n_dims < 1 || n_dims > kMaxDims) {
    return Corrupt(name, absl::StrCat(what, " has ", n_dims, " dimensions (1 to ", kMaxDims,
                                      " allowed)"));
  }
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    ASSIGN_OR_RETURN(uint64_t dim, r.Read<uint64_t>(what));
    // Each bound keeps numel < 2^62, so byte sizes below cannot overflow.
    if (dim == 0 || dim > (uint64_t{1} << 62) / numel) {
      return Corrupt(name, absl::StrCat(what, " has an impossible dimension ", dim));
    }
    numel *= dim;
    t.dims.push_back(static_cast<int64_t>(dim));
  }
  ASSIGN_OR_RETURN(t.type, r.Read<uint32_t>(what));
  ASSIGN_OR_RETURN(t.offset, r.Read<uint64_t>(what));
  const std::optional<GgmlTypeInfo> info = LookupGgmlType(t.type);
  if (!info) return Corrupt(name, absl::StrCat(what, " has unknown ggml type ", t.type));
  if (t.dims[0] % info->block_size != 0) {
    return Corrupt(name, absl::StrCat(what, " has rows of ", t.dims[0], " elements, not a multiple of ",
                                      info->name, "'s block of ", info->block_size));
  }
  t.bytes = numel / info->block_size * info->type_size;
  return t;
}

}  // namespace

bool GgufFile::HasMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, kMagic, 4) == 0;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 24) {
    ::close(fd);
    return Corrupt(path, absl::StrCat("file of ", size, " bytes is shorter than the 24-byte header"));
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
  return parsed;
}

void GgufFile::ReleasePages(const void* data, size_t bytes) const {
  if (mapping_ == nullptr || bytes == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::FromBytes(const uint8_t* data, size_t size,
                                                              std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile(name));
  file->size_ = size;
  Reader r(data, size, name);
  if (size < 4 || std::memcmp(data, kMagic, 4) != 0) {
    return Corrupt(name, "does not start with the magic \"GGUF\"");
  }
  RETURN_IF_ERROR(r.Need(4, "magic"));
  (void)r.Read<uint32_t>("magic");
  ASSIGN_OR_RETURN(file->version_, r.Read<uint32_t>("version"));
  if (file->version_ != 2 && file->version_ != 3) {
    const bool swapped = (file->version_ & 0xffff) == 0 && file->version_ != 0;
    return Corrupt(name, absl::StrCat("version ", file->version_,
                                      swapped ? " (a big-endian file?)" : "",
                                      " is not supported (2 and 3 are)"));
  }
  ASSIGN_OR_RETURN(uint64_t tensor_count, r.Read<uint64_t>("tensor_count"));
  ASSIGN_OR_RETURN(uint64_t kv_count, r.Read<uint64_t>("kv_count"));
  // Each entry takes at least 12 (kv) or 24 (tensor info) bytes.
  if (kv_count > r.remaining() / 12) {
    return Corrupt(name, absl::StrCat("kv_count ", kv_count, " cannot fit in ", size, " bytes"));
  }
  if (tensor_count > r.remaining() / 24) {
    return Corrupt(name, absl::StrCat("tensor_count ", tensor_count, " cannot fit in ", size, " bytes"));
  }

  for (uint64_t k = 0; k < kv_count; ++k) {
    ASSIGN_OR_RETURN(std::string key, r.ReadString("metadata key", kMaxNameBytes));
    ASSIGN_OR_RETURN(uint32_t type, r.Read<uint32_t>(key));
    if (type > static_cast<uint32_t>(GgufValueType::kFloat64)) {
      return Corrupt(name, absl::StrCat("metadata \"", key, "\" has unknown value type ", type));
    }
    ASSIGN_OR_RETURN(GgufValue value, ReadValue(r, static_cast<GgufValueType>(type), key, name, 0));
    if (!file->metadata_.Add(key, std::move(value))) {
      return Corrupt(name, absl::StrCat("metadata key \"", key, "\" appears twice"));
    }
  }

  if (const GgufValue* a = file->metadata_.Find("general.alignment")) {
    if (a->type != GgufValueType::kUint32 || a->u == 0 || (a->u & (a->u - 1)) != 0 ||
        a->u > (1u << 20)) {
      return Corrupt(name, "general.alignment must be a uint32 power of two up to 1 MiB");
    }
    file->alignment_ = a->u;
  }

  std::vector<GgufTensorInfo> infos;
  infos.reserve(tensor_count);
  for (uint64_t k = 0; k < tensor_count; ++k) {
    ASSIGN_OR_RETURN(GgufTensorInfo t, ReadTensorInfo(r, name));
    infos.push_back(std::move(t));
  }

  const uint64_t align = file->alignment_;
  const uint64_t data_start = (r.pos() + align - 1) / align * align;
  if (data_start > size) {
    return Corrupt(name, absl::StrCat("the data section would start at byte ", data_start,
                                      ", past the end of the ", size, "-byte file"));
  }
  const uint64_t data_size = size - data_start;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (GgufTensorInfo& t : infos) {
    const std::string what = absl::StrCat("tensor \"", t.name, "\"");
    if (t.offset % align != 0) {
      return Corrupt(name, absl::StrCat(what, " offset ", t.offset, " is not a multiple of the ",
                                        align, "-byte alignment"));
    }
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      return Corrupt(name, absl::StrCat(what, " [", t.offset, ", ", t.offset + t.bytes,
                                        ") runs past the ", data_size,
                                        "-byte data section (truncated?)"));
    }
    t.data = data + data_start + t.offset;
    ranges.emplace_back(t.offset, t.offset + t.bytes);
    std::string key = t.name;
    if (!file->tensors_.emplace(std::move(key), std::move(t)).second) {
      return Corrupt(name, absl::StrCat(what, " appears twice"));
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return Corrupt(name, absl::StrCat("tensors overlap at data offset ", ranges[i].first));
    }
  }
  return file;
}

const GgufTensorInfo* GgufFile::FindTensor(absl::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

GgufFile::~GgufFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace kvserve
