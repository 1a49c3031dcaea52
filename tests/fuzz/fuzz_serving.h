// What the request fuzzers map requests against: one engine (CPU backend,
// tests/data/tiny-llama3 with its tokenizer.json, a small KV pool) and a chat
// formatter (tests/data/chat_templates/chatml.jinja), built on first use and
// kept for the process's life (the fuzzer never returns from its loop).
#pragma once

#include "engine/core/engine.h"
#include "server/chat_mapping.h"

namespace kvserve::fuzz {

struct FuzzServing {
  Engine* engine = nullptr;
  ChatAccess chat;
};

const FuzzServing& GetFuzzServing();

}  // namespace kvserve::fuzz
