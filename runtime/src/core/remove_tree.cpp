#include "tensordict/remove_tree.h"
#include "tensordict/errors.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace tensordict {

namespace {

// nftw's callback: children before their directory (FTW_DEPTH), links not
// followed (FTW_PHYS), other file systems not entered (FTW_MOUNT: a mount
// point inside stays, and its rmdir fails). The first failing errno stops the walk.
int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = (type == FTW_DP) ? ::rmdir(path) : ::unlink(path);
  return (rc == 0 || errno == ENOENT) ? 0 : errno;
}

}  // namespace

bool remove_tree(const std::filesystem::path& path, std::error_code& ec) noexcept {
  ec.clear();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    ec.assign(errno, std::generic_category());
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
    ec.assign(errno, std::generic_category());
    return false;
  }
  constexpr int kOpenDescriptors = 32;
  const int rc = ::nftw(path.c_str(), remove_entry, kOpenDescriptors, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  if (rc == 0) return true;
  ec.assign(rc > 0 ? rc : errno, std::generic_category());
  return false;
}

void remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  if (!remove_tree(path, ec)) throw RuntimeError("cannot remove the tree " + path.string() + ": " + ec.message());
}

}  // namespace tensordict
