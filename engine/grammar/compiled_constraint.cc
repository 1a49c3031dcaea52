#include "engine/grammar/compiled_constraint.h"

#include "absl/strings/str_cat.h"

namespace kvserve::grammar {

CompiledConstraint::CompiledConstraint(std::shared_ptr<const Grammar> grammar,
                                       std::shared_ptr<const TokenVocabulary> vocabulary,
                                       std::string description)
    : vocabulary_(std::move(vocabulary)),
      description_(std::move(description)),
      automaton_(std::move(grammar)),
      start_(automaton_.Start()) {}

int32_t CompiledConstraint::AdvanceBytes(int32_t state, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (char c : bytes) {
    state = automaton_.Step(state, static_cast<uint8_t>(c));
    if (state == kDeadState) break;
  }
  return state;
}

int32_t CompiledConstraint::AdvanceToken(int32_t state, int32_t id) {
  if (id < 0 || id >= vocabulary_->size() || vocabulary_->bytes(id).empty()) return kDeadState;
  return AdvanceBytes(state, vocabulary_->bytes(id));
}

bool CompiledConstraint::Accepting(int32_t state) {
  if (state < 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.Accepting(state);
}

bool CompiledConstraint::Complete(int32_t state) {
  if (state < 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.Accepting(state) && automaton_.NextBytes(state).none();
}

size_t CompiledConstraint::num_states() {
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.num_states();
}

bool CompiledConstraint::ComputeMask(int32_t state,
                                     std::chrono::steady_clock::time_point deadline) {
  if (static_cast<size_t>(state) < masks_.size() && masks_[state] != nullptr) return true;
  const TokenVocabulary& v = *vocabulary_;
  auto mask = std::make_unique<std::vector<uint32_t>>(v.mask_words(), 0u);
  uint32_t* words = mask->data();
  const auto& nodes = v.nodes();
  const auto& edge_byte = v.edge_byte();
  const auto& edge_node = v.edge_node();
  const auto& node_tokens = v.node_tokens();
  // Depth-first over the trie, carrying the automaton's state: a subtree is
  // skipped as soon as its first byte is not allowed.
  std::vector<std::pair<int32_t, int32_t>> stack{{0, state}};
  size_t visited = 0;
  while (!stack.empty()) {
    auto [node, s] = stack.back();
    stack.pop_back();
    const TokenVocabulary::TrieNode& n = nodes[node];
    for (int32_t e = n.child_begin; e < n.child_end; ++e) {
      if (!automaton_.NextBytes(s).test(edge_byte[e])) continue;
      const int32_t next = automaton_.Step(s, edge_byte[e]);
      if (next == kDeadState) continue;
      const TokenVocabulary::TrieNode& child = nodes[edge_node[e]];
      for (int32_t t = child.token_begin; t < child.token_end; ++t) {
        const int32_t id = node_tokens[t];
        words[id >> 5] |= 1u << (id & 31);
      }
      if (child.child_begin < child.child_end) stack.push_back({edge_node[e], next});
    }
    if ((++visited & 1023) == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
  if (masks_.size() <= static_cast<size_t>(state)) masks_.resize(automaton_.num_states());
  if (++cached_masks_ > kMaxCachedMasks) {
    // A constraint that visits this many states (an adversarial one: JSON
    // schemas visit hundreds) starts over rather than grow without bound.
    for (auto& m : masks_) m.reset();
    cached_masks_ = 1;
  }
  masks_[state] = std::move(mask);
  return true;
}

void CompiledConstraint::OrMask(int32_t state, uint32_t* words) {
  if (state < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  ComputeMask(state, std::chrono::steady_clock::time_point::max());
  const std::vector<uint32_t>& mask = *masks_[state];
  for (size_t i = 0; i < mask.size(); ++i) words[i] |= mask[i];
}

absl::Status CompiledConstraint::WarmMask(int32_t state, std::chrono::nanoseconds budget) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ComputeMask(state, std::chrono::steady_clock::now() + budget)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      description_, ": computing the first token's mask took longer than the limit of ",
      std::chrono::duration_cast<std::chrono::milliseconds>(budget).count(), " ms"));
}

}  // namespace kvserve::grammar
