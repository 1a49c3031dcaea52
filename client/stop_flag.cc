#include "client/stop_flag.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvserve {
namespace {

// Every --stop seen so far (see StopStrings).
std::vector<std::string> &Collected() {
  static std::vector<std::string> *all = new std::vector<std::string>();
  return *all;
}

}  // namespace

absl::StatusOr<std::string> DecodeCEscapes(absl::string_view text) {
  std::string out, error;
  if (!absl::CUnescape(text, &out, &error)) return absl::InvalidArgumentError(error);
  return out;
}

bool AbslParseFlag(absl::string_view text, StopStrings *out, std::string *error) {
  // Abseil parses the default's string form ("") to check it: adds nothing.
  if (text.empty()) {
    out->values = Collected();
    return true;
  }
  absl::StatusOr<std::string> decoded = DecodeCEscapes(text);
  if (!decoded.ok()) {
    *error = absl::StrCat("bad escape in \"", text, "\": ", decoded.status().message(),
                          " (C escapes: \\n \\t \\\\ \\\" \\xNN \\uXXXX)");
    return false;
  }
  if (decoded->empty()) {
    *error = absl::StrCat("\"", text, "\" decodes to an empty stop string");
    return false;
  }
  std::vector<std::string> &all = Collected();
  // Parsing the command line twice must not send a string twice.
  if (std::find(all.begin(), all.end(), *decoded) == all.end()) all.push_back(*decoded);
  out->values = all;
  return true;
}

std::string AbslUnparseFlag(const StopStrings &value) {
  return absl::StrJoin(value.values, ",", [](std::string *out, const std::string &s) {
    out->append(absl::CEscape(s));
  });
}

}  // namespace kvserve
