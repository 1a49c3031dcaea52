#include "tests/fuzz/fuzz_serving.h"

#include <cstdlib>
#include <memory>

#include "base/logging.h"
#include "engine/loading/chat_template_file.h"
#include "engine/loading/model_loader.h"
#include "kernels/cpu/cpu_backend.h"

namespace kvserve::fuzz {
namespace {

FuzzServing* Build() {
  const std::string data_dir = KVSERVE_TEST_DATA_DIR;
  auto source = OpenModelSource(data_dir + "/tiny-llama3");
  KV_CHECK(source.ok()) << source.status();
  EngineConfig config;
  config.num_kv_blocks = 64;  // validation reads the pool size; nothing runs
  auto engine = Engine::Create(config, *std::move(source), std::make_unique<CpuBackend>(),
                               /*stats=*/nullptr);
  KV_CHECK(engine.ok()) << engine.status();
  auto text = ReadChatTemplateFile(data_dir + "/chat_templates/chatml.jinja");
  KV_CHECK(text.ok()) << text.status();
  const ModelInfo& info = (*engine)->info();
  auto formatter = ChatFormatter::Create({.text = *text, .origin = "chatml.jinja"},
                                         *(*engine)->tokenizer(), info.eos_token_ids,
                                         info.bos_token_id);
  KV_CHECK(formatter.ok()) << formatter.status();
  auto* serving = new FuzzServing;
  serving->engine = engine->release();
  serving->chat.formatter = formatter->release();
  return serving;
}

}  // namespace

const FuzzServing& GetFuzzServing() {
  static const FuzzServing* serving = Build();
  return *serving;
}

}  // namespace kvserve::fuzz
