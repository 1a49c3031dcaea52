// kvserve-grammar-bench: what structured outputs cost per token, on the CPU,
// without a model forward: a JSON Schema is compiled for a real tokenizer's
// vocabulary (optionally widened to a 128k-token vocabulary by adding
// concatenations of its tokens, so the trie has the size and shape of a
// Llama-3-class vocabulary), then a valid instance, tokenized by the model's
// tokenizer, is replayed token by token doing exactly what the model runner
// does per step: advance the matcher by the token, then build the next mask.
// Every token must be in the mask before it (a correctness check too).
// Pass 1 starts from a fresh compile (every state's mask computed on first
// sight); pass 2 replays the same instance (every mask cached), which is the
// steady state of a server that serves one schema many times.
//
//   kvserve-grammar-bench --model M.gguf --schema S.json --instance I.json [--vocab 131072]
//   (--grammar G.gbnf instead of --schema)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/grammar/constraint_compiler.h"
#include "engine/loading/model_loader.h"
#include "engine/text/token_bytes.h"

ABSL_FLAG(std::string, model, "", "Model directory or GGUF file: its tokenizer is used.");
ABSL_FLAG(std::string, schema, "", "JSON Schema file.");
ABSL_FLAG(std::string, grammar, "", "GBNF grammar file (instead of --schema).");
ABSL_FLAG(std::string, instance, "", "A JSON value valid against the schema (its text is replayed).");
ABSL_FLAG(int, vocab, 0, "Widen the vocabulary to this many tokens (0: the tokenizer's own).");

namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct PassStats {
  std::vector<double> us;
  bool all_allowed = true;
};

PassStats Replay(kvserve::grammar::CompiledConstraint& c, const std::vector<int32_t>& tokens) {
  PassStats stats;
  std::vector<uint32_t> mask(c.vocabulary().mask_words());
  int32_t state = c.Start();
  std::fill(mask.begin(), mask.end(), 0u);
  c.OrMask(state, mask.data());
  for (int32_t t : tokens) {
    if (((mask[t >> 5] >> (t & 31)) & 1u) == 0) stats.all_allowed = false;
    const Clock::time_point start = Clock::now();
    state = c.AdvanceToken(state, t);
    std::fill(mask.begin(), mask.end(), 0u);
    c.OrMask(state, mask.data());
    c.Accepting(state);
    stats.us.push_back(Us(Clock::now() - start));
    if (state < 0) {
      stats.all_allowed = false;
      break;
    }
  }
  return stats;
}

void Print(const char* name, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  auto pct = [&](double p) { return us[std::min(us.size() - 1, size_t(p * us.size()))]; };
  std::printf("%-24s tokens %4zu  mean %9.1f us  p50 %8.1f us  p99 %9.1f us  max %9.1f us\n",
              name, us.size(), sum / us.size(), pct(0.5), pct(0.99), us.back());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto source = kvserve::OpenModelSource(absl::GetFlag(FLAGS_model));
  if (!source.ok() || source->tokenizer == nullptr) {
    std::fprintf(stderr, "--model: %s\n",
                 source.ok() ? "the model has no tokenizer" : source.status().ToString().c_str());
    return 2;
  }
  const kvserve::Tokenizer& tokenizer = *source->tokenizer;
  std::vector<std::string> bytes = kvserve::MidTextTokenBytes(tokenizer);
  const size_t own = bytes.size();
  // Widen: concatenations of pairs of the tokenizer's own tokens, in a fixed
  // order, skipping the empty (special) ones.
  const size_t target = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_vocab)));
  for (size_t i = 0, j = 1; bytes.size() < target; ++i, j = (j * 7 + 3) % own) {
    const std::string& a = bytes[i % own];
    const std::string& b = bytes[j];
    if (a.empty() || b.empty()) continue;
    bytes.push_back(a + b);
  }
  auto vocabulary = std::make_shared<const kvserve::grammar::TokenVocabulary>(std::move(bytes));
  const bool gbnf = !absl::GetFlag(FLAGS_grammar).empty();
  const std::string schema = ReadFile(gbnf ? absl::GetFlag(FLAGS_grammar) : absl::GetFlag(FLAGS_schema));
  const std::string instance = ReadFile(absl::GetFlag(FLAGS_instance));
  auto ids = tokenizer.Encode(instance.substr(0, instance.find_last_not_of("\n") + 1), false);
  if (!ids.ok()) {
    std::fprintf(stderr, "--instance: %s\n", ids.status().ToString().c_str());
    return 2;
  }
  std::printf("vocabulary %d tokens (tokenizer's own %zu), schema %zu bytes, instance %zu tokens\n",
              vocabulary->size(), own, schema.size(), ids->size());

  kvserve::grammar::ConstraintLimits limits;
  limits.max_compile_time = std::chrono::milliseconds(60000);
  kvserve::grammar::ConstraintCompiler compiler(vocabulary, limits);
  const Clock::time_point start = Clock::now();
  using Kind = kvserve::grammar::ConstraintSpec::Kind;
  auto compiled = compiler.Compile({gbnf ? Kind::kGrammar : Kind::kJsonSchema, schema});
  if (!compiled.ok()) {
    std::fprintf(stderr, "--schema: %s\n", compiled.status().ToString().c_str());
    return 2;
  }
  std::printf("compile (grammar + first mask): %.2f ms\n", Us(Clock::now() - start) / 1000);
  PassStats cold = Replay(**compiled, *ids);
  PassStats warm = Replay(**compiled, *ids);
  Print("first pass (cold masks)", cold.us);
  Print("second pass (cached)", warm.us);
  std::printf("automaton states %zu; every instance token allowed: %s\n",
              (*compiled)->num_states(), cold.all_allowed && warm.all_allowed ? "yes" : "NO");
  return cold.all_allowed && warm.all_allowed ? 0 : 1;
}
