// libFuzzer target: a gRPC request as the server receives it. The first byte
// picks the message (even: GenerateRequest, odd: ChatRequest), the rest is its
// wire encoding, parsed as gRPC parses it and then taken through what the
// service does before queuing: chat rendering, the mapping to the engine's
// Request (text encoded by the model's tokenizer) and ValidateRequest. Every
// input must end in a request or an INVALID_ARGUMENT-style error; none may
// crash, and none may pass validation with values the engine cannot run.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/clock.h"
#include "google/protobuf/stubs/logging.h"
#include "base/logging.h"
#include "engine/core/request_validation.h"
#include "server/chat_mapping.h"
#include "server/request_mapping.h"
#include "tests/fuzz/fuzz_serving.h"

namespace {

void MapAndValidate(const kvserve::v1::GenerateRequest& proto) {
  const kvserve::Engine& engine = *kvserve::fuzz::GetFuzzServing().engine;
  auto request = kvserve::ToEngineRequest(proto, engine, absl::InfiniteFuture());
  if (!request.ok()) return;
  if (!kvserve::ValidateRequest(*request, engine.info()).ok()) return;
  // What the scheduler relies on once a request is valid.
  for (int32_t id : request->prompt) {
    KV_CHECK(id >= 0 && id < engine.info().vocab_size) << "valid request with token " << id;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // protobuf logs every string field with invalid UTF-8 it refuses; the
  // refusal (ParseFromArray false) is what this target checks, not the log.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const kvserve::fuzz::FuzzServing& serving = kvserve::fuzz::GetFuzzServing();
  const void* wire = data + 1;
  const int wire_size = static_cast<int>(size - 1);
  if (data[0] % 2 == 0) {
    kvserve::v1::GenerateRequest proto;
    if (!proto.ParseFromArray(wire, wire_size)) return 0;
    MapAndValidate(proto);
  } else {
    kvserve::v1::ChatRequest chat;
    if (!chat.ParseFromArray(wire, wire_size)) return 0;
    auto prompt = kvserve::RenderChat(serving.chat, chat.messages(), chat.tools_json(),
                                      /*add_generation_prompt=*/true);
    if (!prompt.ok()) return 0;
    MapAndValidate(kvserve::ToGenerateRequest(chat, *prompt, *serving.chat.formatter));
  }
  return 0;
}
