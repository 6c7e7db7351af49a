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
#include "tensordict/detail/test_hooks.h"
#include "tensordict/remove_tree.h"

namespace tensordict::detail {

namespace {
std::atomic<TestHook> active_test_hook{nullptr};
}

TestHook set_test_hook(TestHook hook) { return active_test_hook.exchange(hook); }

void test_hook(std::string_view point) {
  if (const TestHook hook = active_test_hook.load(std::memory_order_relaxed)) hook(point);
}

}  // namespace tensordict::detail

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

AtomicFile::AtomicFile(const fs::path& path, const StagingDir* staging) : path_(path) {
  static std::atomic<unsigned> counter{0};
  tmp_ = path.parent_path() / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
  if (staging) {
    at_ = staging->fd();
    name_ = staging->rel(path);
    tmp_name_ = staging->rel(tmp_);
  } else {
    name_ = path;
    tmp_name_ = tmp_;
  }
  struct stat st {};
  if (::fstatat(at_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    throw RuntimeError(fmt::format("refusing to write through the symbolic link {}", path.string()));
  }
  fd_ = UniqueFd(::openat(at_, tmp_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (fd_.get() < 0) {
    throw RuntimeError(
        fmt::format("cannot write {}: cannot create {}: {}", path.string(), tmp_.string(), std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_.get() >= 0) ::unlinkat(at_, tmp_name_.c_str(), 0);
}

void AtomicFile::fail(const char* what, int err) {
  fd_ = UniqueFd();
  ::unlinkat(at_, tmp_name_.c_str(), 0);
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
  if (::renameat(at_, tmp_name_.c_str(), at_, name_.c_str()) != 0) fail("rename", errno);
}

void write_file_atomic(const fs::path& path, std::string_view content, bool sync, const StagingDir* staging) {
  AtomicFile file(path, staging);
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

void write_data_file(const fs::path& path, const at::Tensor& data, std::size_t bytes, bool sync,
                     const StagingDir* staging) {
  const int at = staging ? staging->fd() : AT_FDCWD;
  const fs::path name = staging ? staging->rel(path) : path;
  const int fd = ::openat(at, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) throw RuntimeError(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlinkat(at, name.c_str(), 0);
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
    ::unlinkat(at, name.c_str(), 0);
    throw RuntimeError(fmt::format("cannot write {}: close failed: {}", path.string(), std::strerror(err)));
  }
}

void grow_data_file(int fd, const fs::path& path, std::size_t offset, const at::Tensor& data, std::size_t bytes,
                    bool sync) {
  const auto fail = [&](const char* what) {
    throw RuntimeError(fmt::format("cannot append {} bytes to {}: {} failed: {}", bytes, path.string(), what,
                                   std::strerror(errno)));
  };
  if (!write_at(fd, data, bytes, offset)) fail("write");
  if (sync && ::fsync(fd) != 0 && errno != EINVAL) fail("fsync");
}

bool link_file(const fs::path& from, const fs::path& to, const StagingDir& staging) {
  return ::linkat(AT_FDCWD, from.c_str(), staging.fd(), staging.rel(to).c_str(), 0) == 0;
}

void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

StagingDir::StagingDir(const fs::path& target) : path_(staging_path(target)) {
  const auto fail = [&](const char* what, int err) {
    throw RuntimeError(fmt::format("cannot write the tensordict to {}: cannot create its staging directory {}: {} "
                                   "failed: {}",
                                   target.string(), path_.string(), what, std::strerror(err)));
  };
  UniqueFd parent(::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.get() < 0) fail("open of its parent", errno);
  const std::string name = path_.filename().string();
  if (::mkdirat(parent.get(), name.c_str(), 0777) != 0) fail("mkdir", errno);
  fd_ = UniqueFd(::openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // Between mkdirat and openat another user of the parent may have put a link
  // (refused by O_NOFOLLOW) or a directory of theirs at the name.
  struct stat st {};
  if (fd_.get() < 0) fail("open", errno);
  if (::fstat(fd_.get(), &st) != 0) fail("stat", errno);
  if (st.st_uid != ::geteuid()) fail("open (another user's directory was put at its name)", EPERM);
}

fs::path StagingDir::rel(const fs::path& p) const {
  fs::path r = p.lexically_relative(path_);
  if (r.empty() || *r.begin() == "..") {
    throw RuntimeError(fmt::format("{} is not below the staging directory {}", p.string(), path_.string()));
  }
  return r;
}

bool StagingDir::still_named() const {
  struct stat named {}, held {};
  return ::lstat(path_.c_str(), &named) == 0 && ::fstat(fd_.get(), &held) == 0 && named.st_ino == held.st_ino &&
         named.st_dev == held.st_dev;
}

void make_dir(const StagingDir& staging, const fs::path& dir) {
  const fs::path name = staging.rel(dir);
  if (name == ".") return;
  if (::mkdirat(staging.fd(), name.c_str(), 0777) != 0 && errno != EEXIST) {
    throw RuntimeError(fmt::format("cannot create directory {}: {}", dir.string(), std::strerror(errno)));
  }
  struct stat st {};
  if (::fstatat(staging.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
    throw RuntimeError(
        fmt::format("cannot write a tensordict level to {}: it exists and is not a directory", dir.string()));
  }
}

void publish_dir(const StagingDir& staged, const fs::path& target, bool sync) {
  const fs::path& staging = staged.path();
  const auto sync_dir = [sync](const fs::path& dir) {
    if (sync) memmap::sync_dir(dir);
  };
  if (sync) (void)::fsync(staged.fd());
  refuse_symlink(target);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  auto fail = [&](const char* what, int err) {
    throw RuntimeError(fmt::format("cannot write the tensordict to {} (staged in {}): {} failed: {}",
                                         target.string(), staging.string(), what, std::strerror(err)));
  };
  // The renames below go by name: publish only while the name is still the
  // directory this writer filled, and check again after (the name can change
  // in between): what another user put at it is never published.
  const auto replaced = [&] {
    return RuntimeError(fmt::format("cannot write the tensordict to {}: its staging directory {} was moved or "
                                    "replaced during the write (by another user of {}); the tree is left as it was",
                                    target.string(), staging.string(), target.parent_path().string()));
  };
  const auto published_ours = [&] {
    struct stat named {}, held {};
    return ::lstat(target.c_str(), &named) == 0 && ::fstat(staged.fd(), &held) == 0 && named.st_ino == held.st_ino &&
           named.st_dev == held.st_dev;
  };
  test_hook("memmap: publishing");
  if (!staged.still_named()) throw replaced();
  if (!exists) {
    if (::rename(staging.c_str(), target.c_str()) != 0) fail("rename", errno);
    if (!published_ours()) {
      (void)::rename(target.c_str(), staging.c_str());
      throw replaced();
    }
    sync_dir(target.parent_path());
    return;
  }
#ifdef SYS_renameat2
  constexpr unsigned kRenameExchange = 2;  // RENAME_EXCHANGE
  if (::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), kRenameExchange) == 0) {
    if (!published_ours()) {
      // Exchange back: the old tree returns to its place.
      (void)::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), kRenameExchange);
      throw replaced();
    }
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
  if (!published_ours()) {
    (void)::rename(target.c_str(), staging.c_str());
    (void)::rename(old.c_str(), target.c_str());
    throw replaced();
  }
  sync_dir(target.parent_path());
  remove_tree(old, ec);
}

bool copy_contents(int in, int out) {
  char buffer[1 << 16];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(in, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return false;
      done += w;
    }
    offset += n;
  }
}

}  // namespace tensordict::detail::memmap
