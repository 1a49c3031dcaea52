#include "engine/grammar/grammar_checks.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvserve::grammar {
namespace {

struct Edge {
  int32_t to;
  bool tail;
};

std::vector<bool> NullableRules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : g.rules[r].alternatives) {
        const bool all = std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
          return e.kind == Element::Kind::kRule && nullable[e.index];
        });
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// Tarjan's strongly connected components, iteratively (grammars from JSON
// schemas can have thousands of rules).
std::vector<int> Components(const std::vector<std::vector<Edge>>& edges) {
  const int n = static_cast<int>(edges.size());
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1), stack;
  std::vector<bool> on_stack(n, false);
  int next_index = 0, next_comp = 0;
  struct Frame {
    int v;
    size_t edge;
  };
  for (int start = 0; start < n; ++start) {
    if (index[start] >= 0) continue;
    std::vector<Frame> frames{{start, 0}};
    index[start] = low[start] = next_index++;
    stack.push_back(start);
    on_stack[start] = true;
    while (!frames.empty()) {
      Frame& f = frames.back();
      if (f.edge < edges[f.v].size()) {
        const int w = edges[f.v][f.edge++].to;
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      const int v = f.v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().v] = std::min(low[frames.back().v], low[v]);
      if (low[v] == index[v]) {
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = next_comp;
        } while (w != v);
        ++next_comp;
      }
    }
  }
  return comp;
}

}  // namespace

absl::Status CheckGrammar(const Grammar& g, std::string_view what) {
  const std::vector<bool> nullable = NullableRules(g);
  // A → B when A can call B before consuming a byte.
  std::vector<std::vector<Edge>> edges(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const auto& alt : g.rules[r].alternatives) {
      for (size_t i = 0; i < alt.size(); ++i) {
        if (alt[i].kind != Element::Kind::kRule) break;
        edges[r].push_back({alt[i].index, i + 1 == alt.size()});
        if (!nullable[alt[i].index]) break;
      }
    }
  }
  const std::vector<int> comp = Components(edges);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const Edge& e : edges[r]) {
      if (e.tail || comp[e.to] != comp[r]) continue;
      // Name a rule the author wrote when the cycle has one.
      std::string name = g.rules[r].name;
      for (size_t k = 0; k < g.rules.size(); ++k) {
        if (comp[k] == comp[r] && !g.rules[k].name.empty() && g.rules[k].name[0] != '_') {
          name = g.rules[k].name;
          break;
        }
      }
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(what), ": rule '", name,
          "' is left-recursive (it can reach itself without consuming a character); "
          "rewrite it with repetition, e.g. expr ::= term (\"+\" term)*"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve::grammar
