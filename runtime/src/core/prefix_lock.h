// One writer of a path at a time, and the staging names of its writes
// (private): memmap's trees and h5 files are written beside their target
// and renamed over it (memmap/files.cpp, kinds/persistent/h5_write.cpp).
#pragma once

#include <filesystem>
#include <vector>

#include "tensordict/memmap.h"

namespace tensordict::detail {

namespace fs = std::filesystem;

// A fresh, unique sibling name for staging a write of `target`.
fs::path staging_path(const fs::path& target);
// The staging directories beside `target`: live writers' (a new tree being
// built, or the old one being removed) and dead writers' leftovers.
std::vector<fs::path> staging_dirs(const fs::path& target);
// Removes leftover staging directories of `target` from writers that died.
// Call with the PrefixLock of `target` held: every writer stages under that
// lock, so any staging directory found then is a dead writer's.
void remove_stale_staging(const fs::path& target);
// An exclusive lock on writing `target`, held from planning to the returned
// handles: a flock on `.<name>.tc-lock` beside it (works across threads,
// processes, PID namespaces and, on NFS, hosts). Waits for another writer
// at most `timeout_s` seconds, then throws naming the lock file.
// The lock file exists while the lock is held (a writer killed meanwhile leaves
// it; the next one takes it over).
class PrefixLock {
 public:
  explicit PrefixLock(const fs::path& target, double timeout_s = MemmapOptions{}.lock_timeout);
  ~PrefixLock();
  PrefixLock(const PrefixLock&) = delete;
  PrefixLock& operator=(const PrefixLock&) = delete;

 private:
  fs::path file_;
  int fd_ = -1;
};

// memmap's own code names them in its namespace.
namespace memmap {
using detail::PrefixLock;
using detail::remove_stale_staging;
using detail::staging_dirs;
using detail::staging_path;
}  // namespace memmap

}  // namespace tensordict::detail
