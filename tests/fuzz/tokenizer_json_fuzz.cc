// libFuzzer target: tokenizer.json. A file that loads is then used: a fixed
// text is encoded (normalizer, pre-tokenizer, model, post-processor of the
// fuzzed file) and decoded back, and the first ids are decoded one by one, as
// the streaming detokenizer does.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/text/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  auto tokenizer = kvserve::HfTokenizer::FromJson(json);
  if (!tokenizer.ok()) return 0;
  for (bool special : {false, true}) {
    auto ids = (*tokenizer)->Encode("Hello, wörld! 123  \n\tÉté 日本語 <s></s>", special);
    if (ids.ok()) {
      (void)(*tokenizer)->Decode(*ids, /*skip_special_tokens=*/!special);
      (void)(*tokenizer)->DecodeMayChange(*ids, /*skip_special_tokens=*/false);
    }
  }
  std::vector<int32_t> first;
  for (int32_t id = 0; id < 64 && id < (*tokenizer)->vocab_size(); ++id) first.push_back(id);
  (void)(*tokenizer)->Decode(first, /*skip_special_tokens=*/true);
  for (int32_t id : first) (void)(*tokenizer)->TokenBytes(id);
  return 0;
}
