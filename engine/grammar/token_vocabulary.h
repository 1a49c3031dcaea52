// The model's tokens as the bytes they add to the text, in a trie, so that a
// token mask walks each shared prefix once: a state's mask visits the trie
// depth-first and stops wherever the grammar cannot take the next byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvserve::grammar {

class TokenVocabulary {
 public:
  /// token_bytes[id]: the bytes token `id` adds mid-text; empty for tokens a
  /// constraint never allows (special and control tokens: the end-of-turn
  /// tokens are allowed separately, where the grammar may end).
  explicit TokenVocabulary(std::vector<std::string> token_bytes);

  int size() const { return static_cast<int>(token_bytes_.size()); }
  const std::string& bytes(int32_t id) const { return token_bytes_[id]; }
  /// 32-bit words of a mask over size() tokens.
  int mask_words() const { return (size() + 31) / 32; }

  // The trie: node 0 is the root; a node's children are edges
  // [child_begin, child_end) of edge_byte / edge_node, sorted by byte; the
  // tokens that end at a node are tokens [token_begin, token_end).
  struct TrieNode {
    int32_t child_begin = 0, child_end = 0;
    int32_t token_begin = 0, token_end = 0;
  };
  const std::vector<TrieNode>& nodes() const { return nodes_; }
  const std::vector<uint8_t>& edge_byte() const { return edge_byte_; }
  const std::vector<int32_t>& edge_node() const { return edge_node_; }
  const std::vector<int32_t>& node_tokens() const { return node_tokens_; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<TrieNode> nodes_;
  std::vector<uint8_t> edge_byte_;
  std::vector<int32_t> edge_node_;
  std::vector<int32_t> node_tokens_;
};

}  // namespace kvserve::grammar
