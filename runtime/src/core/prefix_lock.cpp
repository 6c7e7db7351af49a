// One writer of a path at a time, and the staging names of its writes
// (core/prefix_lock.h).
#include "core/prefix_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

#include "tensordict/errors.h"
#include "tensordict/remove_tree.h"

namespace tensordict::detail {

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

}  // namespace tensordict::detail
