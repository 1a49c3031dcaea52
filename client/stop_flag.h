// --stop for kvserve-cli: a flag given once per stop string, each written
// with C escapes (--stop '\n' is a newline, --stop 'a,b' one string).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvserve {

/// The values of a repeatable flag, in the order given (duplicates once).
/// Abseil keeps only the last value of a repeated flag and parses each into a
/// fresh default, so the parser collects them in a list of its own: it must
/// be the only flag of this type.
struct StopStrings {
  std::vector<std::string> values;
};

/// Decodes \n \t \r \\ \" \' \xNN \NNN \uXXXX \UXXXXXXXX; names the bad
/// escape otherwise.
absl::StatusOr<std::string> DecodeCEscapes(absl::string_view text);

bool AbslParseFlag(absl::string_view text, StopStrings *out, std::string *error);
std::string AbslUnparseFlag(const StopStrings &value);

}  // namespace kvserve
