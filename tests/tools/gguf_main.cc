// kvserve-gguf-tool: exposes kvserve's GGUF reader to the Python differential
// tests (tests/gguf_diff_test.py), which compare it with gguf-py.
//
//   kvserve-gguf-tool tokenizer-json FILE.gguf     tokenizer.json kvserve builds, on stdout
//   kvserve-gguf-tool dequant FILE.gguf OUT_DIR [NAME...]
//                              every tensor (or the NAMEd ones) as float32 in ggml order,
//                              OUT_DIR/<name>.f32 (no Q/K un-permute)
//   kvserve-gguf-tool check FILE.gguf              opens it as a model; exit 1 with the error
//   kvserve-gguf-tool logits FILE.gguf ID...       serves it on the CPU engine; prints the
//                                                  logits after the prompt ids as JSON
#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/loading/gguf_dequant.h"
#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_tokenizer.h"
#include "engine/loading/model_loader.h"
#include "kernels/cpu/cpu_backend.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/engine_test_util.h"

namespace {

int Fail(const absl::Status& s) {
  std::cerr << s.message() << "\n";
  return 1;
}

int TokenizerJson(const std::string& path) {
  auto file = kvserve::GgufFile::Open(path);
  if (!file.ok()) return Fail(file.status());
  auto json = kvserve::GgufTokenizerJson((*file)->metadata());
  if (!json.ok()) return Fail(json.status());
  std::cout << json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

int Dequant(const std::string& path, const std::string& out_dir,
            const std::vector<std::string>& only) {
  auto file = kvserve::GgufFile::Open(path);
  if (!file.ok()) return Fail(file.status());
  std::vector<float> values;
  for (const auto& [name, t] : (*file)->tensors()) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    values.resize(t.numel());
    absl::Status s = kvserve::DequantizeGgml(t.type, t.data, t.numel(), values.data());
    if (!s.ok()) return Fail(s);
    std::ofstream out(out_dir + "/" + name + ".f32", std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    if (!out) return Fail(absl::InternalError("cannot write " + out_dir + "/" + name + ".f32"));
  }
  return 0;
}

int Check(const std::string& path) {
  auto source = kvserve::OpenModelSource(path);
  if (!source.ok()) return Fail(source.status());
  std::cout << "ok\n";
  return 0;
}

int Logits(const std::string& path, const std::vector<std::string>& ids) {
  auto source = kvserve::OpenModelSource(path);
  if (!source.ok()) return Fail(source.status());
  prometheus::Registry registry;
  auto engine = kvserve::Engine::Create(kvserve::EngineConfig{}, *std::move(source),
                                        std::make_unique<kvserve::CpuBackend>(), registry);
  if (!engine.ok()) return Fail(engine.status());
  kvserve::Request request;
  for (const std::string& id : ids) request.prompt.push_back(std::stoi(id));
  request.stopping.max_new_tokens = 1;
  request.stopping.ignore_eos = true;
  request.capture_logits = true;
  auto sink = std::make_shared<kvserve::testing::CollectingSink>();
  if (absl::Status s = (*engine)->Submit(std::move(request), sink); !s.ok()) return Fail(s);
  if (!sink->WaitDone() || !sink->status.ok() || sink->logits.empty()) {
    return Fail(absl::InternalError("the request did not finish with logits"));
  }
  std::cout << nlohmann::json(sink->logits[0]).dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "tokenizer-json") return TokenizerJson(args[1]);
  if (args.size() >= 3 && args[0] == "dequant") {
    return Dequant(args[1], args[2], std::vector<std::string>(args.begin() + 3, args.end()));
  }
  if (args.size() == 2 && args[0] == "check") return Check(args[1]);
  if (args.size() >= 3 && args[0] == "logits") {
    return Logits(args[1], std::vector<std::string>(args.begin() + 2, args.end()));
  }
  std::cerr << "usage: " << argv[0]
            << " tokenizer-json FILE.gguf | dequant FILE.gguf OUT_DIR [NAME...] | check FILE.gguf | "
               "logits FILE.gguf ID...\n";
  return 2;
}
