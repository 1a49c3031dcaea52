// kvserve-gguf-tool: exposes kvserve's GGUF reader to the Python differential
// tests (tests/gguf_diff_test.py), which compare it with gguf-py.
//
//   kvserve-gguf-tool tokenizer-json FILE.gguf     tokenizer.json kvserve builds, on stdout
//   kvserve-gguf-tool dequant FILE.gguf OUT_DIR [NAME...]
//                              every tensor (or the NAMEd ones) as float32 in ggml order,
//                              OUT_DIR/<name>.f32 (no Q/K un-permute)
//   kvserve-gguf-tool check FILE.gguf              opens it as a model; exit 1 with the error
#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/loading/gguf_dequant.h"
#include "engine/loading/gguf_file.h"
#include "engine/loading/gguf_tokenizer.h"
#include "engine/loading/model_loader.h"
#include "nlohmann/json.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "tokenizer-json") return TokenizerJson(args[1]);
  if (args.size() >= 3 && args[0] == "dequant") {
    return Dequant(args[1], args[2], std::vector<std::string>(args.begin() + 3, args.end()));
  }
  if (args.size() == 2 && args[0] == "check") return Check(args[1]);
  std::cerr << "usage: " << argv[0]
            << " tokenizer-json FILE.gguf | dequant FILE.gguf OUT_DIR [NAME...] | check FILE.gguf\n";
  return 2;
}
