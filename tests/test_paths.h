// Where the tests find their data (copied from the Hugging Face fixtures).
#pragma once

#include <cstdlib>
#include <string>

namespace kvserve::testing {

/// The source tree's tests/data, compiled in. A test binary run from a bundle
/// on another machine (deploy/gpu-check.sh) finds it through the environment
/// variable KVSERVE_TEST_DATA_DIR instead.
inline std::string TestDataDir() {
  if (const char* dir = std::getenv("KVSERVE_TEST_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return KVSERVE_TEST_DATA_DIR;
}
inline std::string FixtureDir(const std::string& name) { return TestDataDir() + "/" + name; }

}  // namespace kvserve::testing
