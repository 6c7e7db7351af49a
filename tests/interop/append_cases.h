// The append_memmap case of the interop suite, C++ side: a tree written once
// and grown step by step, which Python's TensorDict.load_memmap reads after
// each step (run_interop.py, "append_memmap cases").
#pragma once

#include <tensordict/tensordict.h>
#include <nlohmann/json.hpp>

#include <string>

namespace interop {

// The number of steps: step 0 writes the tree, each later one appends rows.
inline constexpr int kAppendSteps = 5;

// Runs step `step` on the tree at `dir` and returns the canonical JSON of
// what the tree then holds: the rows written so far, built directly (never
// read back from the tree).
tensordict::Json append_step(const std::string& dir, int step);

}  // namespace interop
