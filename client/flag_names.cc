#include "client/flag_names.h"

#include <algorithm>
#include <deque>

namespace kvserve {

std::vector<char*> NormalizeFlagNames(int argc, char** argv) {
  static std::deque<std::string> storage;  // stable addresses for the rewritten args
  std::vector<char*> out;
  bool after_terminator = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") after_terminator = true;
    if (!after_terminator && i > 0 && arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      const size_t end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + 2, arg.begin() + end, '-', '_');
    }
    storage.push_back(std::move(arg));
    out.push_back(storage.back().data());
  }
  return out;
}

}  // namespace kvserve
