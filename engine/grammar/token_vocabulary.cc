#include "engine/grammar/token_vocabulary.h"

#include <algorithm>
#include <numeric>

namespace kvserve::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes)
    : token_bytes_(std::move(token_bytes)) {
  // Sorted by bytes, tokens sharing a prefix are adjacent: the trie is built
  // level by level from ranges of this order, children in byte order.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < size(); ++id) {
    if (!token_bytes_[id].empty()) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return token_bytes_[a] < token_bytes_[b] || (token_bytes_[a] == token_bytes_[b] && a < b);
  });
  struct Pending {
    int32_t node;
    size_t begin, end;  // into order, all sharing the node's prefix
    size_t depth;
  };
  nodes_.push_back({});
  std::vector<Pending> level{{0, 0, order.size(), 0}};
  while (!level.empty()) {
    std::vector<Pending> next;
    for (const Pending& p : level) {
      size_t i = p.begin;
      // Tokens that end here sort first.
      const int32_t tokens_at = static_cast<int32_t>(node_tokens_.size());
      while (i < p.end && token_bytes_[order[i]].size() == p.depth) node_tokens_.push_back(order[i++]);
      nodes_[p.node].token_begin = tokens_at;
      nodes_[p.node].token_end = static_cast<int32_t>(node_tokens_.size());
      nodes_[p.node].child_begin = static_cast<int32_t>(edge_byte_.size());
      while (i < p.end) {
        const uint8_t byte = static_cast<uint8_t>(token_bytes_[order[i]][p.depth]);
        size_t j = i;
        while (j < p.end && static_cast<uint8_t>(token_bytes_[order[j]][p.depth]) == byte) ++j;
        const int32_t child = static_cast<int32_t>(nodes_.size());
        nodes_.push_back({});
        edge_byte_.push_back(byte);
        edge_node_.push_back(child);
        next.push_back({child, i, j, p.depth + 1});
        i = j;
      }
      nodes_[p.node].child_end = static_cast<int32_t>(edge_byte_.size());
    }
    level = std::move(next);
  }
}

}  // namespace kvserve::grammar
