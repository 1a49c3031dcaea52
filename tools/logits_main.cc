// kvserve-logits: the logits kvserve computes at every position of a prompt,
// for comparing with an independent reference (tests/reference/).
//
//   kvserve-logits --model DIR|FILE.gguf --token_ids 1,2,3 --out logits.npy
//
// Runs one whole-prompt prefill on the CPU backend (float32 activations;
// weight matrices per --dtype, as the server's) through the same model code
// the server runs, and writes a float32 [n, vocab] .npy file.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/kv/kv_cache.h"
#include "engine/loading/model_loader.h"
#include "engine/model/model_registry.h"
#include "kernels/cpu/cpu_backend.h"

ABSL_FLAG(std::string, model, "", "Model directory or .gguf file.");
ABSL_FLAG(std::string, token_ids, "", "Prompt token ids, comma-separated.");
ABSL_FLAG(std::string, out, "logits.npy", "Output .npy file (float32 [n, vocab]).");
ABSL_FLAG(std::string, dtype, "float32",
          "Weight matrices: float32, bfloat16, or auto (bfloat16 and block formats kept as stored), as "
          "the server's --dtype on the CPU.");
ABSL_FLAG(std::string, cpu_activations, "auto",
          "As the server's --cpu_activations: auto (int8-rounded activations for GGUF block "
          "formats) or float32.");

namespace kvserve {
namespace {

constexpr int kBlockSize = 16;

// NumPy format 1.0: magic, header length, a dict padded so the data starts
// at a multiple of 64 bytes.
bool WriteNpy(const std::string& path, const float* data, int rows, int cols) {
  std::string header = absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", rows,
                                    ", ", cols, "), }");
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  const uint16_t header_len = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&header_len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(data), sizeof(float) * size_t(rows) * cols);
  return bool(out);
}

int Run() {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_token_ids), ',',
                                               absl::SkipWhitespace())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      std::cerr << "--token_ids: not a token id: " << part << "\n";
      return 2;
    }
    ids.push_back(id);
  }
  if (ids.empty()) {
    std::cerr << "--token_ids: give at least one id\n";
    return 2;
  }
  absl::StatusOr<ModelSource> source = OpenModelSource(absl::GetFlag(FLAGS_model));
  if (!source.ok()) {
    std::cerr << source.status().message() << "\n";
    return 1;
  }
  const int n = static_cast<int>(ids.size());
  absl::StatusOr<CpuWeights> weights = ParseCpuWeights(absl::GetFlag(FLAGS_dtype));
  if (!weights.ok()) {
    std::cerr << weights.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<CpuActivations> activations =
      ParseCpuActivations(absl::GetFlag(FLAGS_cpu_activations));
  if (!activations.ok()) {
    std::cerr << activations.status().message() << "\n";
    return 2;
  }
  CpuBackend backend(*weights, *activations);
  auto model = CreateModel(source->config, *source->weights, backend, n, n);
  if (!model.ok()) {
    std::cerr << model.status().message() << "\n";
    return 1;
  }
  // Read by tests/cpu_weight_dtypes_test.py: the storage --dtype chose.
  std::cerr << "weight bytes: " << (*model)->weight_bytes() << "\n";
  const int blocks = (n + kBlockSize - 1) / kBlockSize;
  auto cache = KvCache::Create(backend, source->config.kv_cache_shape(), blocks, kBlockSize);
  if (!cache.ok()) {
    std::cerr << cache.status().message() << "\n";
    return 1;
  }
  std::vector<int32_t> table(blocks), positions(n), slots(n), rows(n), cu = {0, n}, ctx = {n};
  for (int b = 0; b < blocks; ++b) table[b] = b;
  for (int i = 0; i < n; ++i) positions[i] = slots[i] = rows[i] = i;
  StepBatch batch;
  batch.num_tokens = batch.num_prefill_tokens = batch.num_samples = n;
  batch.num_prefill_seqs = 1;
  batch.token_ids = Tensor(ids.data(), DType::kInt32, {n});
  batch.positions = Tensor(positions.data(), DType::kInt32, {n});
  batch.slot_mapping = Tensor(slots.data(), DType::kInt32, {n});
  batch.prefill_cu_seqlens = Tensor(cu.data(), DType::kInt32, {2});
  batch.prefill_context_lens = Tensor(ctx.data(), DType::kInt32, {1});
  batch.prefill_block_tables = Tensor(table.data(), DType::kInt32, {1, blocks});
  batch.prefill_max_q_len = batch.prefill_max_context = n;
  batch.decode_context_lens = Tensor(ctx.data(), DType::kInt32, {0});
  batch.decode_block_tables = Tensor(table.data(), DType::kInt32, {0, blocks});
  batch.sample_rows = Tensor(rows.data(), DType::kInt32, {n});
  absl::StatusOr<Tensor> logits = (*model)->Forward(batch, **cache);
  if (!logits.ok()) {
    std::cerr << logits.status().message() << "\n";
    return 1;
  }
  if (!WriteNpy(absl::GetFlag(FLAGS_out), logits->as<float>(), n, source->config.vocab_size)) {
    std::cerr << "cannot write " << absl::GetFlag(FLAGS_out) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace kvserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kvserve-logits --model DIR|FILE.gguf --token_ids 1,2,3 --out logits.npy");
  absl::ParseCommandLine(argc, argv);
  return kvserve::Run();
}
