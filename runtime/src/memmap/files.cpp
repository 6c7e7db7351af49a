// Directory creation, symlink refusal and atomic file writes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/remove_tree.h"

namespace tensordict::detail::memmap {

void refuse_symlink(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    throw RuntimeError(fmt::format("refusing to write through the symbolic link {}", path.string()));
  }
}

void make_dir(const fs::path& dir) {
  refuse_symlink(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("cannot create directory {}: {}", dir.string(), ec.message()));
  if (!fs::is_directory(fs::symlink_status(dir))) {
    throw RuntimeError(
        fmt::format("cannot write a tensordict level to {}: it exists and is not a directory", dir.string()));
  }
}

AtomicFile::AtomicFile(const fs::path& path) : path_(path) {
  refuse_symlink(path);
  static std::atomic<unsigned> counter{0};
  tmp_ = path.parent_path() / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
  fd_ = UniqueFd(::open(tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (fd_.get() < 0) {
    throw RuntimeError(
        fmt::format("cannot write {}: cannot create {}: {}", path.string(), tmp_.string(), std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_.get() >= 0) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const char* what, int err) {
  fd_ = UniqueFd();
  ::unlink(tmp_.c_str());
  throw RuntimeError(fmt::format("cannot write {}: {} failed: {}", path_.string(), what, std::strerror(err)));
}

void AtomicFile::write_at(std::string_view content, std::size_t offset) {
  std::size_t done = 0;
  while (done < content.size()) {
    const std::size_t chunk = std::min<std::size_t>(content.size() - done, std::size_t{1} << 30);
    const ssize_t n = ::pwrite(fd_.get(), content.data() + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFile::resize(std::size_t bytes) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(bytes)) != 0) fail("ftruncate", errno);
}

void AtomicFile::commit(bool sync) {
  if (sync && ::fsync(fd_.get()) != 0) fail("fsync", errno);
  if (::close(fd_.release()) != 0) fail("close", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename", errno);
}

void write_file_atomic(const fs::path& path, std::string_view content, bool sync) {
  AtomicFile file(path);
  file.write_at(content, 0);
  file.commit(sync);
}

namespace {
// Writes the first `bytes` bytes of `data` (contiguous, CPU) at `offset` of
// `fd`; false with errno set on failure.
bool write_at(int fd, const at::Tensor& data, std::size_t bytes, std::size_t offset) {
  const char* p = static_cast<const char*>(data.data_ptr());
  std::size_t done = 0;
  while (done < bytes) {
    const std::size_t chunk = std::min<std::size_t>(bytes - done, std::size_t{1} << 30);
    const ssize_t n = ::pwrite(fd, p + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

void write_data_file(const fs::path& path, const at::Tensor& data, std::size_t bytes, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) throw RuntimeError(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    throw RuntimeError(fmt::format("cannot write {} ({} bytes): {} failed: {}", path.string(), bytes, what,
                                         std::strerror(err)));
  };
  if (data.defined()) {
    if (!write_at(fd, data, bytes, 0)) fail("write");
  } else if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    fail("ftruncate");
  }
  if (sync && ::fsync(fd) != 0 && errno != EINVAL) fail("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw RuntimeError(fmt::format("cannot write {}: close failed: {}", path.string(), std::strerror(err)));
  }
}

std::size_t grow_data_file(const fs::path& path, std::size_t offset, const at::Tensor& data, std::size_t bytes,
                           bool sync) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    throw RuntimeError(fmt::format("cannot open {} to append to it: {}", path.string(), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw RuntimeError(fmt::format("cannot append to {}: not a regular file", path.string()));
  const auto fail = [&](const char* what) {
    throw RuntimeError(fmt::format("cannot append {} bytes to {}: {} failed: {}", bytes, path.string(), what,
                                   std::strerror(errno)));
  };
  if (!write_at(fd.get(), data, bytes, offset)) fail("write");
  if (sync && ::fsync(fd.get()) != 0 && errno != EINVAL) fail("fsync");
  return static_cast<std::size_t>(st.st_size);
}

bool link_file(const fs::path& from, const fs::path& to) { return ::link(from.c_str(), to.c_str()) == 0; }

void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

namespace {
constexpr std::string_view kStagingTag = ".tc-staging.";
}

fs::path staging_path(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() /
         fmt::format(".{}{}{}.{}", target.filename().string(), kStagingTag, ::getpid(), counter.fetch_add(1));
}

std::vector<fs::path> staging_dirs(const fs::path& target) {
  const std::string prefix = fmt::format(".{}{}", target.filename().string(), kStagingTag);
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) out.push_back(it->path());
  }
  return out;
}

void remove_stale_staging(const fs::path& target) {
  for (const fs::path& dir : staging_dirs(target)) {
    std::error_code ignore;
    remove_tree(dir, ignore);
  }
}

PrefixLock::PrefixLock(const fs::path& target, double timeout_s)
    : file_(target.parent_path() / fmt::format(".{}.tc-lock", target.filename().string())) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(timeout_s, 0.0));
  for (;;) {
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      throw RuntimeError(fmt::format("cannot write {}: cannot open its lock file {}: {}", target.string(),
                                           file_.string(), std::strerror(errno)));
    }
    for (auto pause = std::chrono::milliseconds(1); ::flock(fd_, LOCK_EX | LOCK_NB) != 0;) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
        continue;
      }
      ::close(fd_);
      if (err == EWOULDBLOCK) {
        throw RuntimeError(fmt::format("cannot write {}: another writer has held its lock file {} for {} s "
                                       "(MemmapOptions::lock_timeout); the writer holding it is still running",
                                       target.string(), file_.string(), timeout_s));
      }
      throw RuntimeError(
          fmt::format("cannot write {}: cannot lock {}: {}", target.string(), file_.string(), std::strerror(err)));
    }
    // The holder before us removes the file when it is done: a lock on a file
    // no longer at the path locks nothing, so open the path again.
    struct stat held {}, named {};
    if (::fstat(fd_, &held) == 0 && ::lstat(file_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      return;
    }
    ::close(fd_);
  }
}

// Removed while still locked (then closing releases the lock): writers
// waiting on it see it gone and open the path again.
PrefixLock::~PrefixLock() {
  ::unlink(file_.c_str());
  ::close(fd_);
}

void publish_dir(const fs::path& staging, const fs::path& target, bool sync) {
  const auto sync_dir = [sync](const fs::path& dir) {
    if (sync) memmap::sync_dir(dir);
  };
  sync_dir(staging);
  refuse_symlink(target);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  auto fail = [&](const char* what, int err) {
    throw RuntimeError(fmt::format("cannot write the tensordict to {} (staged in {}): {} failed: {}",
                                         target.string(), staging.string(), what, std::strerror(err)));
  };
  if (!exists) {
    if (::rename(staging.c_str(), target.c_str()) != 0) fail("rename", errno);
    sync_dir(target.parent_path());
    return;
  }
#ifdef SYS_renameat2
  constexpr unsigned kRenameExchange = 2;  // RENAME_EXCHANGE
  if (::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), kRenameExchange) == 0) {
    sync_dir(target.parent_path());
    remove_tree(staging, ec);  // the old tree
    return;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) fail("renameat2(RENAME_EXCHANGE)", errno);
#endif
  // No atomic exchange here: move the old tree aside, then the new one in.
  const fs::path old = staging_path(target);
  if (::rename(target.c_str(), old.c_str()) != 0) fail("rename", errno);
  if (::rename(staging.c_str(), target.c_str()) != 0) {
    const int err = errno;
    (void)::rename(old.c_str(), target.c_str());
    fail("rename", err);
  }
  sync_dir(target.parent_path());
  remove_tree(old, ec);
}

}  // namespace tensordict::detail::memmap
