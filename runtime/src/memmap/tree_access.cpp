// Reading inside a tree only: no symbolic link below the top, regular files only.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/format.h"
#include "memmap/memmap_detail.h"

namespace tensordict::detail::memmap {

namespace {
[[noreturn]] void refuse_link(const fs::path& path) {
  throw RuntimeError(fmt::format(
      "{} is a symbolic link inside the tree; loading follows no link (it could lead out of the tree)", path.string()));
}
}  // namespace

bool tree_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) refuse_link(dir);
  return S_ISDIR(st.st_mode);
}

bool tree_entry_exists(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int open_tree_file(const fs::path& path, int flags, struct ::stat* st, std::string_view what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) refuse_link(path);
    return -1;
  }
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    ::close(fd);
    throw RuntimeError(fmt::format("{} {} is not a regular file", what, path.string()));
  }
  return fd;
}

}  // namespace tensordict::detail::memmap
