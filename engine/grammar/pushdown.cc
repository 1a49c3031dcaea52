#include "engine/grammar/pushdown.h"

#include <algorithm>

namespace kvserve::grammar {
namespace {

uint64_t Key(int32_t pos, int32_t parent) {
  return (uint64_t(uint32_t(pos)) << 32) | uint32_t(parent);
}

}  // namespace

Pushdown::Pushdown(std::shared_ptr<const Grammar> grammar, size_t max_nodes)
    : grammar_(std::move(grammar)), max_nodes_(max_nodes) {
  const Grammar& g = *grammar_;
  alt_starts_.resize(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const auto& alt : g.rules[r].alternatives) {
      alt_starts_[r].push_back(static_cast<int32_t>(slots_.size()));
      for (const Element& e : alt) {
        slots_.push_back({e.kind == Element::Kind::kBytes ? SlotKind::kBytes : SlotKind::kRule,
                          e.index});
      }
      slots_.push_back({SlotKind::kEnd, 0});
    }
  }
  pending_.clear();
  for (int32_t start : alt_starts_[g.root]) pending_.push_back({start, -1});
  Closure();
  start_ = InternState();
}

int32_t Pushdown::InternNode(int32_t pos, int32_t parent) {
  auto [it, inserted] = node_index_.try_emplace(Key(pos, parent), 0);
  if (inserted) {
    it->second = static_cast<int32_t>(nodes_.size());
    nodes_.push_back({pos, parent});
    if (nodes_.size() > max_nodes_) overflowed_ = true;
  }
  return it->second;
}

int32_t Pushdown::ReturnPoint(int32_t pos, int32_t parent) {
  return slots_[pos].kind == SlotKind::kEnd ? parent : InternNode(pos, parent);
}

void Pushdown::Closure() {
  leaves_.clear();
  accepting_ = false;
  visited_.clear();
  while (!pending_.empty()) {
    auto [pos, parent] = pending_.back();
    pending_.pop_back();
    if (!visited_.try_emplace(Key(pos, parent), true).second) continue;
    const Slot& slot = slots_[pos];
    switch (slot.kind) {
      case SlotKind::kEnd:
        if (parent < 0) {
          accepting_ = true;
        } else {
          pending_.push_back({nodes_[parent].pos, nodes_[parent].parent});
        }
        break;
      case SlotKind::kBytes:
        leaves_.push_back(InternNode(pos, parent));
        break;
      case SlotKind::kRule: {
        const int32_t ret = ReturnPoint(pos + 1, parent);
        for (int32_t start : alt_starts_[slot.index]) pending_.push_back({start, ret});
        break;
      }
    }
    if (overflowed_) {
      pending_.clear();
      leaves_.clear();
      accepting_ = false;
      return;
    }
  }
  std::sort(leaves_.begin(), leaves_.end());
  leaves_.erase(std::unique(leaves_.begin(), leaves_.end()), leaves_.end());
}

int32_t Pushdown::InternState() {
  if (leaves_.empty() && !accepting_) return kDeadState;
  std::vector<int32_t> key = leaves_;
  key.push_back(accepting_ ? -1 : -2);
  auto [it, inserted] = state_index_.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = static_cast<int32_t>(states_.size());
    State s;
    s.leaves = leaves_;
    s.accepting = accepting_;
    for (int32_t leaf : leaves_) s.next |= grammar_->byte_sets[slots_[nodes_[leaf].pos].index];
    states_.push_back(std::move(s));
  }
  return it->second;
}

int32_t Pushdown::Step(int32_t state, uint8_t byte) {
  if (state < 0) return kDeadState;
  State& s = states_[state];
  if (!s.next.test(byte)) return kDeadState;
  if (s.transitions == nullptr) {
    s.transitions = std::make_unique<std::array<int32_t, 256>>();
    s.transitions->fill(kUnknown);
  }
  int32_t& cached = (*s.transitions)[byte];
  if (cached != kUnknown) return cached;
  if (overflowed_) return kDeadState;
  pending_.clear();
  for (int32_t leaf : s.leaves) {
    const Node n = nodes_[leaf];
    if (grammar_->byte_sets[slots_[n.pos].index].test(byte)) pending_.push_back({n.pos + 1, n.parent});
  }
  Closure();
  // states_ may grow below: `s` and `cached` are not used after this.
  const int32_t next = InternState();
  (*states_[state].transitions)[byte] = next;
  return next;
}

}  // namespace kvserve::grammar
