#include "engine/grammar/grammar.h"

namespace kvserve::grammar {

size_t Grammar::num_elements() const {
  size_t n = 0;
  for (const Rule& r : rules) {
    for (const auto& alt : r.alternatives) n += alt.size() + 1;
  }
  return n;
}

}  // namespace kvserve::grammar
