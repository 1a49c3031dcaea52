// Structured outputs through the engine on the built-in model (random
// weights, byte-level tokenizer, so the model's own preferences fight the
// constraint at every step), on the CPU backend:
//   - sampled at temperature 1 with many seeds, every output matches its
//     grammar and ends (EOS) exactly where the grammar is complete;
//   - an unconstrained request draws the same tokens whether or not
//     constrained ones share its batch;
//   - the matcher survives preemption: with a KV pool too small for the
//     batch, sequences are preempted and resumed, and still match;
//   - ignore_eos with a constraint is refused; a cancelled constrained
//     request frees its blocks.
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine_test_util.h"

namespace kvserve::testing {
namespace {

using ::testing::HasSubstr;
using Kind = grammar::ConstraintSpec::Kind;

const std::vector<std::string>& Grammars() {
  static const std::vector<std::string> g = {
      R"(root ::= [0-9]{4} "-" [0-1][0-9] "-" [0-3][0-9])",
      R"(root ::= "yes" | "no" | "maybe so")",
      "root ::= \"{\" pair (\", \" pair){0,3} \"}\"\n"
      "pair ::= \"\\\"\" [a-z]{1,6} \"\\\": \" (num | \"true\" | \"null\" | list)\n"
      "num ::= \"-\"? [1-9] [0-9]{0,4}\nlist ::= \"[\" (num (\",\" num){0,2})? \"]\"",
      R"(root ::= ([A-Z] [a-z]{0,8} " "){1,4} "!")",
  };
  return g;
}

Request Constrained(Engine& engine, const std::string& gbnf, uint64_t seed) {
  Request r;
  r.prompt = {1, 72, 105, 33};
  r.sampling.temperature = 1.f;
  r.sampling.seed = seed;
  r.stopping.max_new_tokens = 120;
  absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> c =
      engine.CompileConstraint({Kind::kGrammar, gbnf});
  EXPECT_TRUE(c.ok()) << c.status();
  if (c.ok()) r.constraint = *c;
  return r;
}

void ExpectMatches(const std::string& gbnf, const CollectingSink& sink) {
  ASSERT_TRUE(sink.status.ok()) << sink.status;
  EXPECT_EQ(sink.finish_reason, FinishReason::kEos) << gbnf << " gave " << sink.text;
  absl::StatusOr<bool> m = grammar::GbnfMatches(gbnf, sink.text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(*m) << gbnf << " does not match '" << sink.text << "'";
}

class StructuredOutputEngineTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (t_.engine) EXPECT_EQ(t_.engine->num_used_blocks(), 0);
  }
  TestEngine t_;
};

TEST_F(StructuredOutputEngineTest, SampledOutputsMatchTheirGrammarAndEndWhereItIsComplete) {
  t_ = MakeCpuEngine("");
  Engine& engine = *t_.engine;
  std::vector<std::pair<std::string, std::shared_ptr<CollectingSink>>> runs;
  for (const std::string& g : Grammars()) {
    for (uint64_t seed = 0; seed < 6; ++seed) {
      auto sink = std::make_shared<CollectingSink>();
      ASSERT_TRUE(engine.Submit(Constrained(engine, g, seed), sink).ok());
      runs.push_back({g, sink});
    }
  }
  for (auto& [g, sink] : runs) {
    ASSERT_TRUE(sink->WaitDone());
    ExpectMatches(g, *sink);
  }
}

TEST_F(StructuredOutputEngineTest, UnconstrainedNeighboursDrawTheSameTokens) {
  t_ = MakeCpuEngine("");
  Engine& engine = *t_.engine;
  Request plain;
  plain.prompt = {1, 80, 81, 82};
  plain.sampling.temperature = 1.f;
  plain.sampling.seed = 42;
  plain.stopping.max_new_tokens = 40;
  plain.stopping.ignore_eos = true;
  auto alone = RunToCompletion(engine, plain);
  std::vector<std::shared_ptr<CollectingSink>> neighbours;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    auto sink = std::make_shared<CollectingSink>();
    ASSERT_TRUE(engine.Submit(Constrained(engine, Grammars()[2], seed), sink).ok());
    neighbours.push_back(sink);
  }
  auto together = RunToCompletion(engine, plain);
  for (auto& n : neighbours) {
    ASSERT_TRUE(n->WaitDone());
    ExpectMatches(Grammars()[2], *n);
  }
  EXPECT_EQ(together->tokens, alone->tokens);
}

TEST_F(StructuredOutputEngineTest, MatchersSurvivePreemption) {
  EngineConfig config;
  config.block_size = 8;
  config.num_kv_blocks = 14;  // 112 slots for 8 sequences of ~4 + up to 60 tokens
  config.max_num_seqs = 8;
  config.enable_prefix_caching = false;
  t_ = MakeCpuEngine("", config);
  Engine& engine = *t_.engine;
  const std::string g = R"(root ::= ([a-z]{2,8} " "){6,8} "end")";
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    auto sink = std::make_shared<CollectingSink>();
    Request r = Constrained(engine, g, seed);
    r.stopping.max_new_tokens = 90;  // the pool holds one whole sequence
    const absl::Status submitted = engine.Submit(r, sink);
    ASSERT_TRUE(submitted.ok()) << submitted;
    sinks.push_back(sink);
  }
  for (auto& s : sinks) {
    ASSERT_TRUE(s->WaitDone());
    ExpectMatches(g, *s);
  }
  EXPECT_GT(MetricValue(*t_.registry, "kvserve_preemptions_total"), 0);
}

TEST_F(StructuredOutputEngineTest, IgnoreEosIsRefusedAndCancelFreesBlocks) {
  t_ = MakeCpuEngine("");
  Engine& engine = *t_.engine;
  Request r = Constrained(engine, R"(root ::= [a-z]+)", 1);
  r.stopping.ignore_eos = true;
  const absl::Status s = engine.Submit(r, std::make_shared<CollectingSink>());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("stopping.ignore_eos cannot be combined"));

  // A grammar that cannot end before 1000 tokens: the cancel comes first.
  r = Constrained(engine, R"(root ::= [a-z]{1000})", 1);
  r.stopping.max_new_tokens = 1500;
  auto sink = std::make_shared<CollectingSink>();
  ASSERT_TRUE(engine.Submit(r, sink).ok());
  absl::SleepFor(absl::Milliseconds(50));
  sink->Cancel();
  engine.Wake();
  ASSERT_TRUE(sink->WaitDone());
  EXPECT_EQ(sink->status.code(), absl::StatusCode::kCancelled) << sink->status;
  // TearDown checks that no block is left.
}

}  // namespace
}  // namespace kvserve::testing
