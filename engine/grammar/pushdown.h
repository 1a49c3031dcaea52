// Runs a Grammar over bytes as a pushdown automaton whose configurations are
// interned: a stack is a node (position to match next, parent node) shared
// by every stack with the same tail, and a state is the sorted set of stacks
// whose top is a byte class, plus whether the input may end there. States
// and their byte transitions are built lazily and kept, so the automaton
// becomes a DFA over the configurations the output actually visits: inside a
// JSON string, every character leads back to the same state, and its token
// mask (token_mask.h) is computed once.
//
// Calls in tail position (the last element of an alternative) return to the
// caller's own return point, so right recursion such as `x*` does not grow
// the stack. Left recursion is refused before (grammar_checks.h).
//
// Not thread-safe: CompiledConstraint serializes its users.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/grammar/grammar.h"

namespace kvserve::grammar {

inline constexpr int32_t kDeadState = -1;

class Pushdown {
 public:
  explicit Pushdown(std::shared_ptr<const Grammar> grammar, size_t max_nodes = 1 << 20);

  int32_t Start() const { return start_; }
  /// The state after `byte`, or kDeadState when the grammar cannot continue
  /// with it (or the automaton outgrew max_nodes: see overflowed()).
  int32_t Step(int32_t state, uint8_t byte);
  /// The input may end here.
  bool Accepting(int32_t state) const { return states_[state].accepting; }
  /// Bytes that do not lead to kDeadState.
  const ByteSet& NextBytes(int32_t state) const { return states_[state].next; }

  size_t num_states() const { return states_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  bool overflowed() const { return overflowed_; }

 private:
  enum class SlotKind : uint8_t { kBytes, kRule, kEnd };
  struct Slot {
    SlotKind kind;
    int32_t index;  // byte set or rule
  };
  struct Node {
    int32_t pos;
    int32_t parent;  // -1: the bottom of the stack
  };
  struct State {
    std::vector<int32_t> leaves;  // nodes whose slot is kBytes, sorted
    bool accepting = false;
    ByteSet next;
    std::unique_ptr<std::array<int32_t, 256>> transitions;  // kUnknown until taken
  };
  static constexpr int32_t kUnknown = -2;

  int32_t InternNode(int32_t pos, int32_t parent);
  // The return point after a call at `pos`: the caller's own when the call
  // is the alternative's last element.
  int32_t ReturnPoint(int32_t pos, int32_t parent);
  // Expands the pending (pos, parent) pairs into leaves and acceptance.
  void Closure();
  int32_t InternState();

  std::shared_ptr<const Grammar> grammar_;
  size_t max_nodes_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int32_t>> alt_starts_;  // per rule
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> node_index_;
  std::vector<State> states_;
  absl::flat_hash_map<std::vector<int32_t>, int32_t> state_index_;  // leaves + acceptance
  int32_t start_ = 0;
  bool overflowed_ = false;

  // Closure scratch, reused.
  std::vector<std::pair<int32_t, int32_t>> pending_;
  std::vector<uint64_t> visited_list_;
  absl::flat_hash_map<uint64_t, bool> visited_;
  std::vector<int32_t> leaves_;
  bool accepting_ = false;
};

}  // namespace kvserve::grammar
