// libFuzzer target: the JSON body of POST /v1/completions (first byte even) or
// /v1/chat/completions (odd), taken through what OpenAiService::Generate does
// before submitting: ParseOpenAiRequest, chat rendering, ToEngineRequest and
// ValidateRequest, and every error through the OpenAI error mapping (which
// rewrites messages to the HTTP parameter names). The HTTP framing itself is
// Boost.Beast's parser and request_framing.cc's rules (tested in
// http_server_test and http_framing_test), not fuzzed here.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/time/clock.h"
#include "engine/core/request_validation.h"
#include "server/chat_mapping.h"
#include "server/http/openai_error.h"
#include "server/http/openai_request.h"
#include "server/request_mapping.h"
#include "tests/fuzz/fuzz_serving.h"

namespace {

void ReportError(const absl::Status& status, const kvserve::http::ParamNames& names) {
  (void)kvserve::http::ErrorBody(kvserve::http::ToHttpError(status, names)).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using kvserve::http::Endpoint;
  const kvserve::fuzz::FuzzServing& serving = kvserve::fuzz::GetFuzzServing();
  const Endpoint endpoint = data[0] % 2 == 0 ? Endpoint::kCompletions : Endpoint::kChat;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto parsed = kvserve::http::ParseOpenAiRequest(endpoint, body);
  if (!parsed.ok()) return ReportError(parsed.status(), {}), 0;
  kvserve::http::OpenAiRequest& r = *parsed;
  kvserve::http::ApplyHttpSamplingDefaults(serving.engine->info().sampling_defaults,
                                           *r.generate.mutable_sampling());
  const bool chat = endpoint == Endpoint::kChat;
  const kvserve::http::ParamNames names = chat
                                              ? kvserve::http::ChatParamNames(r.max_tokens_name)
                                              : kvserve::http::CompletionParamNames(r.max_tokens_name);
  kvserve::v1::GenerateRequest generate = r.generate;
  if (chat) {
    auto prompt = kvserve::RenderChat(serving.chat, r.chat.messages(), "", true);
    if (!prompt.ok()) return ReportError(prompt.status(), names), 0;
    *r.chat.mutable_sampling() = r.generate.sampling();
    *r.chat.mutable_stopping() = r.generate.stopping();
    generate = kvserve::ToGenerateRequest(r.chat, *prompt, *serving.chat.formatter);
  }
  auto request = kvserve::ToEngineRequest(generate, *serving.engine, absl::InfiniteFuture());
  if (!request.ok()) return ReportError(request.status(), names), 0;
  absl::Status valid = kvserve::ValidateRequest(*request, serving.engine->info());
  if (!valid.ok()) ReportError(valid, names);
  return 0;
}
