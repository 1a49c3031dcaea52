// Where the tests find their data (copied from the Hugging Face fixtures).
#pragma once

#include <string>

namespace kvserve::testing {

inline std::string TestDataDir() { return KVSERVE_TEST_DATA_DIR; }
inline std::string FixtureDir(const std::string& name) { return TestDataDir() + "/" + name; }

}  // namespace kvserve::testing
