// The GGUF reader on files built here: a good file opens; every truncation
// and thousands of random corruptions are refused with a message (never a
// crash); each malformed field is refused naming it.
#include <random>

#include "engine/loading/gguf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf_builder.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<GgufFile>> Parse(const std::string& bytes) {
  return GgufFile::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.gguf");
}


// A small well-formed file: a few metadata types, two tensors.
GgufBuilder SmallFile() {
  GgufBuilder b;
  b.String("general.architecture", "llama");
  b.U32("llama.block_count", 1);
  b.F32("llama.rope.freq_base", 10000.f);
  b.Bool("tokenizer.ggml.add_bos_token", true);
  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  b.I32Array("tokenizer.ggml.token_type", {1, 1, 1});
  b.Tensor("a.weight", {4, 2}, /*F32*/ 0, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  b.Tensor("b.weight", {32}, /*Q8_0*/ 8, std::string(34, '\x01'));
  return b;
}

TEST(GgufFileTest, GoodFileOpens) {
  // FromBytes borrows the image: it must outlive the file (ASan found the
  // tensor read below going to a freed temporary).
  const std::string image = SmallFile().Build();
  auto file = Parse(image);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->version(), 3u);
  EXPECT_EQ(*(*file)->metadata().GetString("general.architecture"), "llama");
  EXPECT_EQ(*(*file)->metadata().GetUint("llama.block_count"), 1u);
  EXPECT_EQ(*(*file)->metadata().GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_THAT(*(*file)->metadata().GetStringArray("tokenizer.ggml.tokens"),
              ::testing::ElementsAre("a", "b", "ab"));
  const GgufTensorInfo* a = (*file)->FindTensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->dims, ::testing::ElementsAre(4, 2));
  EXPECT_EQ(a->bytes, 32u);
  float first;
  std::memcpy(&first, a->data, 4);
  EXPECT_EQ(first, 1.f);
  EXPECT_EQ((*file)->FindTensor("b.weight")->bytes, 34u);
  // A wrong type is an error naming the key and both types.
  auto wrong = (*file)->metadata().GetString("llama.block_count");
  EXPECT_THAT(wrong.status().message(), HasSubstr("\"llama.block_count\" is uint32, expected string"));
  EXPECT_THAT((*file)->metadata().GetUint("missing.key").status().message(), HasSubstr("missing.key"));
}

TEST(GgufFileTest, EveryTruncationIsRefused) {
  const std::string good = SmallFile().Build();
  for (size_t n = 0; n < good.size(); ++n) {
    auto file = Parse(good.substr(0, n));
    EXPECT_FALSE(file.ok()) << "prefix of " << n << " bytes was accepted";
    if (!file.ok()) {
      EXPECT_THAT(file.status().message(), HasSubstr("t.gguf: invalid GGUF file"));
    }
  }
}

TEST(GgufFileTest, RandomCorruptionNeverCrashes) {
  const std::string good = SmallFile().Build();
  std::mt19937 rng(11);
  int refused = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::string bad = good;
    const int flips = 1 + iter % 4;
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto file = Parse(bad);
    if (!file.ok()) {
      ++refused;
      EXPECT_FALSE(file.status().message().empty());
    }
  }
  EXPECT_GT(refused, 1000);  // most corruptions are caught; none crashes
}

// Patches `bytes` at the first occurrence of `find` (which must exist).
std::string Patch(std::string bytes, const std::string& find, const std::string& replace) {
  const size_t at = bytes.find(find);
  EXPECT_NE(at, std::string::npos) << find;
  if (at != std::string::npos) bytes.replace(at, find.size(), replace);
  return bytes;
}

template <typename V>
std::string Pod(V v) {
  std::string s;
  GgufBuilder::Append(s, v);
  return s;
}

TEST(GgufFileTest, MalformedFieldsAreRefusedByName) {
  const std::string good = SmallFile().Build();
  struct Case {
    std::string bytes;
    std::string message;
  };
  std::vector<Case> cases = {
      {"GGUX" + good.substr(4), "magic"},
      {Patch(good, "GGUF" + Pod(uint32_t{3}), "GGUF" + Pod(uint32_t{1})), "version 1"},
      {Patch(good, "GGUF" + Pod(uint32_t{3}), "GGUF" + Pod(uint32_t{3u << 24})), "big-endian"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint64_t{6}), Pod(uint64_t{2}) + Pod(uint64_t{1} << 60)),
       "kv_count"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint64_t{6}), Pod(uint64_t{1} << 60) + Pod(uint64_t{6})),
       "tensor_count"},
      // The architecture string claims more bytes than the file has.
      {Patch(good, Pod(uint64_t{5}) + "llama", Pod(uint64_t{1} << 40) + "llama"), "general.architecture"},
      // The token array claims 2^40 strings.
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{3}) + Pod(uint64_t{1}) + "a",
             Pod(uint32_t{8}) + Pod(uint64_t{1} << 40) + Pod(uint64_t{1}) + "a"),
       "tokenizer.ggml.tokens"},
      {Patch(good, Pod(uint32_t{7}) + Pod(uint8_t{1}), Pod(uint32_t{7}) + Pod(uint8_t{2})), "bool value 2"},
      {Patch(good, Pod(uint32_t{4}) + Pod(uint32_t{1}), Pod(uint32_t{99}) + Pod(uint32_t{1})),
       "unknown value type 99"},
      // a.weight: 5 dimensions; a zero dimension; an unknown type; a misaligned offset.
      {Patch(good, "a.weight" + Pod(uint32_t{2}), "a.weight" + Pod(uint32_t{5})), "5 dimensions"},
      {Patch(good, "a.weight" + Pod(uint32_t{2}) + Pod(uint64_t{4}),
             "a.weight" + Pod(uint32_t{2}) + Pod(uint64_t{0})),
       "impossible dimension 0"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{0}),
             Pod(uint64_t{2}) + Pod(uint32_t{77}) + Pod(uint64_t{0})),
       "unknown ggml type 77"},
      {Patch(good, Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{0}),
             Pod(uint64_t{2}) + Pod(uint32_t{0}) + Pod(uint64_t{4})),
       "not a multiple of the 32-byte alignment"},
      // b.weight: 33 elements are not whole Q8_0 blocks; an offset past the end.
      {Patch(good, "b.weight" + Pod(uint32_t{1}) + Pod(uint64_t{32}),
             "b.weight" + Pod(uint32_t{1}) + Pod(uint64_t{33})),
       "not a multiple of Q8_0's block of 32"},
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{32}), Pod(uint32_t{8}) + Pod(uint64_t{1} << 20)),
       "runs past"},
      // b.weight placed on top of a.weight.
      {Patch(good, Pod(uint32_t{8}) + Pod(uint64_t{32}), Pod(uint32_t{8}) + Pod(uint64_t{0})),
       "overlap"},
      // The same tensor name twice.
      {Patch(good, "b.weight", "a.weight"), "appears twice"},
  };
  for (const Case& c : cases) {
    auto file = Parse(c.bytes);
    ASSERT_FALSE(file.ok()) << "accepted; expected: " << c.message;
    EXPECT_THAT(file.status().message(), HasSubstr(c.message));
  }
  GgufBuilder dup = SmallFile();
  dup.U32("llama.block_count", 2);
  EXPECT_THAT(Parse(dup.Build()).status().message(), HasSubstr("\"llama.block_count\" appears twice"));
  GgufBuilder align = SmallFile();
  align.U32("general.alignment", 24);
  EXPECT_THAT(Parse(align.Build(24)).status().message(), HasSubstr("general.alignment"));
  GgufBuilder align64 = SmallFile();
  align64.U32("general.alignment", 64);
  EXPECT_TRUE(Parse(align64.Build(64)).ok());
}

}  // namespace
}  // namespace kvserve::testing
