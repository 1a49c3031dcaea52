#include "base/version.h"

#include "absl/strings/str_cat.h"

// Set on this file only (base/CMakeLists.txt), so that a new version
// recompiles one file.
#ifndef KVSERVE_SOURCE_VERSION
#define KVSERVE_SOURCE_VERSION "unknown"
#endif
#ifndef KVSERVE_BUILD_TYPE
#define KVSERVE_BUILD_TYPE "unknown"
#endif

namespace kvserve {

absl::string_view SourceVersion() { return KVSERVE_SOURCE_VERSION; }

absl::string_view BuildType() { return KVSERVE_BUILD_TYPE; }

std::string VersionLine(absl::string_view program, absl::string_view note) {
  return absl::StrCat(program, " ", SourceVersion(), " (", BuildType(), " build",
                      note.empty() ? "" : ", ", note, ")");
}

}  // namespace kvserve
