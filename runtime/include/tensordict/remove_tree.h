// Removing a directory tree without the standard library's remove_all.
//
// PyTorch 2.x's libtorch_cpu.so (the pip wheel and pytorch.org's zip) exports
// its own copy of std::filesystem, and a program linked against it resolves
// the standard remove_all to that copy, which crashes (a call through a null
// pointer). The runtime, tests and examples remove trees with this
// function instead, built on POSIX calls alone.
#pragma once

#include <filesystem>
#include <system_error>

namespace tensordict {

// Removes `path` and everything below it, never following symbolic links (a
// link is removed, not what it points to). A missing path is not an error.
// Returns false and sets `ec` on the first failure.
bool remove_tree(const std::filesystem::path& path, std::error_code& ec) noexcept;

// As above; throws RuntimeError naming the path and the cause.
void remove_tree(const std::filesystem::path& path);

}  // namespace tensordict
