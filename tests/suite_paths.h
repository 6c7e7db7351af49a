// Where a test suite finds the repository and its scratch space. Defined per
// suite in one generated translation unit (tensorclass_suite_paths() in
// tests/CMakeLists.txt) rather than as compile definitions: absolute paths on
// every command line would make each checkout compile everything anew, where
// the compiler cache can share all but that one small file.
#pragma once

#include <filesystem>

namespace td_test::paths {

extern const char* const source_dir;  // the repository root
extern const char* const test_tmp;    // scratch space under the suite's build dir

inline std::filesystem::path source(const char* relative) { return std::filesystem::path(source_dir) / relative; }

}  // namespace td_test::paths
