// What --version prints: the source version and how this binary was built,
// both fixed when CMake configures the build (base/CMakeLists.txt).
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace kvserve {

/// `git describe --tags --always --dirty` of the source tree when the build
/// was configured (or -DKVSERVE_VERSION=...); "unknown" outside a checkout.
absl::string_view SourceVersion();

/// The CMake build type (Release, Debug, RelWithDebInfo, ...).
absl::string_view BuildType();

/// One line: "PROGRAM VERSION (BUILD_TYPE build[, NOTE])".
std::string VersionLine(absl::string_view program, absl::string_view note = {});

}  // namespace kvserve
