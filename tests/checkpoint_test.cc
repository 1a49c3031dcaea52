// Checkpoints on disk: safetensors headers are validated so that truncated or
// malicious files are errors, never crashes or out-of-bounds reads; sharded
// and half-precision checkpoints load; a written checkpoint round-trips.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/loading/checkpoint.h"
#include "engine/loading/default_model.h"
#include "engine/loading/safetensors.h"
#include "engine/model/llama_weights.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/engine_test_util.h"
#include "tests/golden_util.h"
#include "tests/test_paths.h"
#include "tools/model_presets.h"
#include "tools/safetensors_writer.h"

namespace kvserve {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A safetensors image: header JSON (as given) + `data_bytes` bytes of data.
std::vector<uint8_t> Image(const std::string& header, size_t data_bytes, int64_t claimed_len = -1) {
  const uint64_t len = claimed_len >= 0 ? uint64_t(claimed_len) : header.size();
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0x3f);
  for (int i = 0; i < 8; ++i) out[i] = (len >> (8 * i)) & 0xff;
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string Parse(const std::vector<uint8_t>& bytes) {
  auto f = SafetensorsFile::FromBytes(bytes.data(), bytes.size(), "test.safetensors");
  return f.ok() ? "" : std::string(f.status().message());
}

// The built-in generator fills large tensors on several threads: each value
// depends on its index alone, so a whole fill equals one made of small
// pieces (each below the size that spreads over threads).
TEST(RandomWeightSourceTest, AWholeFillEqualsOneInPieces) {
  ModelConfig config = FindPreset("llama-3.2-1b")->config;
  RandomWeightSource weights(config, 7);
  const std::string name = "model.layers.0.mlp.gate_proj.weight";
  const std::vector<int64_t> shape = weights.ShapeOf(name);
  ASSERT_EQ(shape.size(), 2u);
  const int64_t n = shape[0] * shape[1];  // 16.8 M values
  std::vector<float> whole(n), pieces(n);
  weights.Fill(name, shape, 0, n, whole.data());
  constexpr int64_t kPiece = 1 << 20;
  for (int64_t off = 0; off < n; off += kPiece) {
    weights.Fill(name, shape, off, std::min(kPiece, n - off), pieces.data() + off);
  }
  EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), n * sizeof(float)), 0);
  EXPECT_NE(whole[0], whole[n - 1]);
}

TEST(SafetensorsTest, ValidFileParses) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},"c":{"dtype":"F16","shape":[],"data_offsets":[32,34]}})";
  std::vector<uint8_t> bytes = Image(header, 34);
  auto f = SafetensorsFile::FromBytes(bytes.data(), bytes.size(), "ok");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ((*f)->tensors().size(), 3u);
  const TensorData& a = (*f)->tensors().at("a");
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_THAT(a.shape, ::testing::ElementsAre(2, 3));
  EXPECT_EQ(a.bytes, 24u);
  EXPECT_EQ(static_cast<const uint8_t*>(a.data), bytes.data() + 8 + header.size());
  EXPECT_EQ((*f)->tensors().at("c").numel(), 1);
}

TEST(SafetensorsTest, MalformedFilesAreClearErrors) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"shorter than the length field", {1, 2, 3}, "shorter than the 8-byte"},
      {"header length past the end", Image("{" + ok_entry + "}", 8, 1000), "runs past the end"},
      {"huge header length", Image("{}", 0, int64_t(1) << 40), "exceeds"},
      {"bad JSON", Image("{\"a\": [", 0), "not a JSON object"},
      {"not an object", Image("[1,2,3]", 0), "not a JSON object"},
      {"truncated data", Image("{" + ok_entry + "}", 4), "outside the 4-byte data section"},
      {"end before begin", Image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), "outside"},
      {"size does not match dtype x shape", Image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "need 12"},
      {"overlap",
       Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             12),
       "overlap"},
      {"impossible shape",
       Image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8),
       "impossible size"},
      {"negative dimension", Image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "bad dimension"},
      {"unsupported dtype", Image(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8), "F64"},
      {"missing fields", Image(R"({"a":{"dtype":"F32"}})", 0), "needs dtype, shape and data_offsets"},
      {"float offsets", Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.5]}})", 8), "non-integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(Parse(c.bytes), HasSubstr(c.message));
  }
}

TEST(SafetensorsTest, RandomCorruptionNeverCrashes) {
  // Flip bytes of a valid file's header and cut it at random lengths: every
  // outcome is a parse or a clean error (run under ASan to see the reads).
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})";
  const std::vector<uint8_t> valid = Image(header, 32);
  std::mt19937 rng(1);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = valid;
    for (int flips = 1 + rng() % 4; flips > 0; --flips) bytes[rng() % bytes.size()] = rng() % 256;
    bytes.resize(rng() % 2 ? bytes.size() : rng() % bytes.size());
    auto f = SafetensorsFile::FromBytes(bytes.data(), bytes.size(), "fuzz");
    if (!f.ok()) {
      ++errors;
      continue;
    }
    for (const auto& [name, t] : (*f)->tensors()) {
      const uint8_t* p = static_cast<const uint8_t*>(t.data);
      ASSERT_GE(p, bytes.data());
      ASSERT_LE(p + t.bytes, bytes.data() + bytes.size()) << name;
    }
  }
  EXPECT_GT(errors, 100);
}

class CheckpointDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kvserve_ckpt_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a checkpoint of `preset` with the built-in generator's weights.
  void Write(const std::string& preset, DType dtype, int64_t shard_bytes) {
    ModelConfig config = FindPreset(preset)->config;
    config.checkpoint_dtype = dtype;
    RandomWeightSource weights(config, 2024);
    std::vector<TensorToWrite> tensors;
    for (const std::string& name : weights.TensorNames()) {
      tensors.push_back({name, dtype, weights.ShapeOf(name), [&weights, name, shape = weights.ShapeOf(name)](
                                                                 int64_t off, int64_t n, float* out) {
                           weights.Fill(name, shape, off, n, out);
                         }});
    }
    ASSERT_TRUE(WriteSafetensors(dir_.string(), tensors, shard_bytes).ok());
    std::ofstream(dir_ / "config.json") << ConfigJson(config);
  }

  std::vector<fs::path> Shards() const {
    std::vector<fs::path> shards;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().rfind("model-", 0) == 0) shards.push_back(e.path());
    }
    std::sort(shards.begin(), shards.end());
    return shards;
  }

  fs::path dir_;
};

TEST_F(CheckpointDirTest, WrittenDefaultModelServesLikeTheBuiltInOne) {
  Write("default", DType::kFloat32, 0);
  testing::TestEngine builtin = testing::MakeCpuEngine("");
  testing::TestEngine from_disk = testing::MakeCpuEngine(dir_.string());
  ASSERT_NE(from_disk.engine, nullptr);
  const std::vector<int32_t> prompt = {1, 50, 60, 70, 80};
  auto a = testing::RunToCompletion(*builtin.engine, testing::GreedyRequest(prompt, 12, true));
  auto b = testing::RunToCompletion(*from_disk.engine, testing::GreedyRequest(prompt, 12, true));
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_EQ(testing::MaxAbsDiff(a->logits[0], b->logits[0]), 0.f);
}

TEST_F(CheckpointDirTest, ShardedHalfPrecisionCheckpointsLoad) {
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("tiny-qwen2", dtype, 200 << 10);  // ~200 KiB shards
    ASSERT_TRUE(fs::exists(dir_ / "model.safetensors.index.json"));
    ASSERT_GE(Shards().size(), 3u);
    auto ckpt = Checkpoint::Open(dir_.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    // Every value is the generator's, rounded to the checkpoint's dtype.
    RandomWeightSource weights((*ckpt)->config(), 2024);
    for (const char* name : {"model.layers.1.self_attn.k_proj.bias", "model.layers.0.mlp.down_proj.weight"}) {
      auto t = (*ckpt)->Get(name);
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ(t->dtype, dtype);
      std::vector<float> want(t->numel()), got(t->numel());
      weights.Fill(name, t->shape, 0, t->numel(), want.data());
      ASSERT_TRUE(ConvertToFloat32(t->data, dtype, t->numel(), got.data()).ok());
      for (int64_t i = 0; i < t->numel(); ++i) {
        const uint16_t bits = dtype == DType::kBFloat16 ? FloatToBFloat16(want[i]) : FloatToHalf(want[i]);
        const float rounded = dtype == DType::kBFloat16 ? BFloat16ToFloat(bits) : HalfToFloat(bits);
        ASSERT_EQ(got[i], rounded) << name << "[" << i << "]";
      }
    }
    testing::TestEngine t = testing::MakeCpuEngine(dir_.string());
    ASSERT_NE(t.engine, nullptr);
    auto out = testing::RunToCompletion(*t.engine, testing::GreedyRequest({5, 6, 7}, 8));
    EXPECT_EQ(out->tokens.size(), 8u);
  }
}

TEST_F(CheckpointDirTest, BadCheckpointDirectoriesAreClearErrors) {
  Write("tiny-llama3", DType::kFloat32, 300 << 10);
  auto open_error = [&] {
    auto c = Checkpoint::Open(dir_.string());
    return c.ok() ? std::string() : std::string(c.status().message());
  };
  // A shard listed in the index is missing.
  ASSERT_GE(Shards().size(), 2u);
  const fs::path shard = Shards()[1];
  fs::rename(shard, dir_ / "moved");
  EXPECT_THAT(open_error(), HasSubstr(shard.filename().string()));
  fs::rename(dir_ / "moved", shard);
  // An index that escapes the directory.
  const std::string index_path = (dir_ / "model.safetensors.index.json").string();
  std::string index = *ReadTextFile(index_path);
  std::ofstream(index_path) << R"({"weight_map": {"model.norm.weight": "../../etc/passwd"}})";
  EXPECT_THAT(open_error(), HasSubstr("not a plain file name"));
  std::ofstream(index_path) << "not json";
  EXPECT_THAT(open_error(), HasSubstr("weight_map"));
  std::ofstream(index_path) << index;
  // A truncated shard.
  fs::resize_file(shard, fs::file_size(shard) - 100);
  EXPECT_THAT(open_error(), HasSubstr("outside"));
  // No weights at all; no config.
  fs::remove(index_path);
  EXPECT_THAT(open_error(), HasSubstr("no model.safetensors"));
  fs::remove(dir_ / "config.json");
  EXPECT_THAT(open_error(), HasSubstr("config.json"));
  EXPECT_THAT(Checkpoint::Open("/nonexistent/dir").status().message(), HasSubstr("not a directory"));
}

TEST_F(CheckpointDirTest, MissingOrMisshapenTensorsAreNamed) {
  // The default preset's config with a tensor renamed, then a wrong shape.
  ModelConfig config = FindPreset("tiny-llama3")->config;
  RandomWeightSource weights(config, 1);
  for (int variant = 0; variant < 2; ++variant) {
    std::vector<TensorToWrite> tensors;
    for (const std::string& name : weights.TensorNames()) {
      std::vector<int64_t> shape = weights.ShapeOf(name);
      std::string written = name;
      if (name == "model.norm.weight" && variant == 0) written = "model.final_norm.weight";
      if (name == "model.layers.1.mlp.up_proj.weight" && variant == 1) shape[0] += 1;
      tensors.push_back({written, DType::kFloat32, shape, [](int64_t, int64_t n, float* out) {
                           std::fill(out, out + n, 0.5f);
                         }});
    }
    ASSERT_TRUE(WriteSafetensors(dir_.string(), tensors, 0).ok());
    std::ofstream(dir_ / "config.json") << ConfigJson(config);
    auto source = OpenModelSource(dir_.string());
    ASSERT_TRUE(source.ok()) << source.status();
    CpuBackend backend;
    auto loaded = LoadLlamaWeights(source->config, *source->weights, backend);
    ASSERT_FALSE(loaded.ok());
    EXPECT_THAT(std::string(loaded.status().message()),
                HasSubstr(variant == 0 ? "no tensor \"model.norm.weight\""
                                       : "\"model.layers.1.mlp.up_proj.weight\" has shape [257, 128]"));
  }
}

TEST(DTypeTest, HalfAndBFloat16Conversions) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);  // overflow → inf
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie → even
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = HalfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), bits) << bits;  // exact round trip
  }
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(1.00390625f), 0x3F80);  // 1 + 2^-8: tie → even
  EXPECT_EQ(FloatToBFloat16(1.01171875f), 0x3F82);  // 1 + 3·2^-8: tie → even (up)
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
}

// A bfloat16 checkpoint on the CPU: --dtype auto keeps its matrices in bf16,
// --dtype float32 widens them; both hold the same values, so the greedy
// tokens agree and the logits differ only by float32 summation order (the
// 20-token prompt: sgemm over float32, the small-M kernel over bf16).
TEST_F(CheckpointDirTest, Bf16CheckpointKeepsBf16MatricesUnderAuto) {
  Write("default", DType::kBFloat16, 0);
  testing::TestEngine widened =
      testing::MakeEngine(dir_.string(), std::make_unique<CpuBackend>(CpuWeights::kFloat32));
  testing::TestEngine kept =
      testing::MakeEngine(dir_.string(), std::make_unique<CpuBackend>(CpuWeights::kAsStored));
  ASSERT_NE(widened.engine, nullptr);
  ASSERT_NE(kept.engine, nullptr);
  std::vector<int32_t> prompt = {1};
  for (int i = 1; i < 20; ++i) prompt.push_back(40 + 7 * i);
  auto a = testing::RunToCompletion(*widened.engine, testing::GreedyRequest(prompt, 8, true));
  auto b = testing::RunToCompletion(*kept.engine, testing::GreedyRequest(prompt, 8, true));
  EXPECT_EQ(a->tokens, b->tokens);
  ASSERT_EQ(a->logits.size(), b->logits.size());
  for (size_t i = 0; i < a->logits.size(); ++i) {
    EXPECT_LT(testing::MaxAbsDiff(a->logits[i], b->logits[i]), 1e-4f) << "token " << i;
  }
}

}  // namespace
}  // namespace kvserve