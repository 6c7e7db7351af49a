// Directory creation, symlink refusal and atomic file writes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "../format.h"
#include "memmap_detail.h"

namespace tensordict::detail::memmap {

void refuse_symlink(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    throw std::runtime_error(fmt::format("refusing to write through the symbolic link {}", path.string()));
  }
}

void make_dir(const fs::path& dir) {
  refuse_symlink(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create directory {}: {}", dir.string(), ec.message()));
  if (!fs::is_directory(fs::symlink_status(dir))) {
    throw std::runtime_error(
        fmt::format("cannot write a tensordict level to {}: it exists and is not a directory", dir.string()));
  }
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  refuse_symlink(path);
  static std::atomic<unsigned> counter{0};
  const fs::path tmp =
      path.parent_path() / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) {
    throw std::runtime_error(
        fmt::format("cannot write {}: cannot create {}: {}", path.string(), tmp.string(), std::strerror(errno)));
  }
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {} failed: {}", path.string(), what, std::strerror(err)));
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: close failed: {}", path.string(), std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: rename failed: {}", path.string(), std::strerror(err)));
  }
}

}  // namespace tensordict::detail::memmap
