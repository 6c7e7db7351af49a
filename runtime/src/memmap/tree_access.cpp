// Reading inside a tree only: the tree is resolved once to a directory
// descriptor and every file is reached from it, one component at a time with
// O_NOFOLLOW (no symbolic link below the top, even one swapped in during the
// load); regular files only; a load sees one version of the tree, whole.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/format.h"
#include "memmap/archive_tree.h"
#include "memmap/memmap_detail.h"

namespace tensordict::detail::memmap {

namespace {

[[noreturn]] void refuse_link(const fs::path& path) {
  throw RuntimeError(fmt::format(
      "{} is a symbolic link inside the tree; loading follows no link (it could lead out of the tree)", path.string()));
}

// The tree a load on this thread reads: its top and its descriptor, or the
// archive it is.
struct Root {
  fs::path top;  // lexically normal, absolute
  UniqueFd fd;
  const ArchiveTree* archive = nullptr;
  std::string given;  // the top as the caller named it, which the loaders' paths start with
};
thread_local const Root* active_root = nullptr;

fs::path normal(const fs::path& path) { return fs::absolute(path).lexically_normal(); }

// Whether `rest` is a relative path of plain names: no empty, "." or ".." part.
bool plain_names(std::string_view rest) {
  for (;;) {
    const auto slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    rest.remove_prefix(slash + 1);
  }
}

// `path` relative to the active root; nullopt outside any root.
std::optional<fs::path> below_root(const fs::path& path) {
  if (!active_root) return std::nullopt;
  // The loaders build their paths from the top as given, with plain names:
  // those need no absolute, normal form (which costs a few allocations).
  const std::string& p = path.native();
  const std::string& given = active_root->given;
  if (p == given) return fs::path(".");
  if (!given.empty() && p.size() > given.size() + 1 && p.compare(0, given.size(), given) == 0 &&
      p[given.size()] == '/' && plain_names(std::string_view(p).substr(given.size() + 1))) {
    return fs::path(p.substr(given.size() + 1));
  }
  fs::path rel = normal(path).lexically_relative(active_root->top);
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  return rel;
}

// The directory `name` of the directory `parent` (`path` names it in
// messages); -1 with errno when missing or not a directory. Throws for a
// symbolic link (which O_DIRECTORY | O_NOFOLLOW reports as ENOTDIR or ELOOP).
UniqueFd open_dir_at(int parent, const char* name, const fs::path& path) {
  UniqueFd fd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0 && (errno == ELOOP || errno == ENOTDIR)) {
    const int err = errno;
    struct stat st {};
    if (::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) refuse_link(path);
    errno = err;
  }
  return fd;
}

// The directory holding the last component of `rel` (relative to the
// root), reached one component at a time; -1 with errno when missing.
// Throws for a symbolic link on the way.
UniqueFd parent_at_root(const fs::path& rel) {
  UniqueFd dir(::dup(active_root->fd.get()));
  fs::path walked = active_root->top;
  const fs::path parent = rel.parent_path();
  for (const auto& component : parent) {
    if (component == ".") continue;
    walked /= component;
    UniqueFd next = open_dir_at(dir.get(), component.c_str(), walked);
    if (next.get() < 0) return UniqueFd();
    dir = std::move(next);
  }
  return dir;
}

// Whether the directory `fd` is still what `top` names (a writer may have
// exchanged the tree meanwhile).
bool still_at(const fs::path& top, int fd) {
  struct stat named {}, held {};
  return ::stat(top.c_str(), &named) == 0 && ::fstat(fd, &held) == 0 && named.st_ino == held.st_ino &&
         named.st_dev == held.st_dev;
}

// Whether a writer holds the lock of `top` (PrefixLock): its rewrite is under way.
bool writer_active(const fs::path& top) {
  const fs::path lock = top.parent_path() / fmt::format(".{}.tc-lock", top.filename().string());
  UniqueFd fd(::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return false;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return false;
  return errno == EWOULDBLOCK;
}

}  // namespace

bool tree_dir(const fs::path& dir) {
  if (auto rel = below_root(dir)) {
    if (active_root->archive) return active_root->archive->is_dir(*rel);
    if (*rel == ".") return true;
    UniqueFd parent = parent_at_root(*rel);
    if (parent.get() < 0) return false;
    return open_dir_at(parent.get(), rel->filename().c_str(), dir).get() >= 0;
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) refuse_link(dir);
  return S_ISDIR(st.st_mode);
}

bool tree_entry_exists(const fs::path& path) {
  struct stat st {};
  if (auto rel = below_root(path)) {
    if (active_root->archive) return active_root->archive->exists(*rel);
    UniqueFd parent = parent_at_root(*rel);
    return parent.get() >= 0 && ::fstatat(parent.get(), rel->filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  }
  return ::lstat(path.c_str(), &st) == 0;
}

int open_tree_file(const fs::path& path, int flags, struct ::stat* st, std::string_view what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  flags |= O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd;
  if (auto rel = below_root(path)) {
    UniqueFd parent = parent_at_root(*rel);
    if (parent.get() < 0) return -1;
    fd = UniqueFd(::openat(parent.get(), rel->filename().c_str(), flags));
  } else {
    fd = UniqueFd(::open(path.c_str(), flags));
  }
  if (fd.get() < 0) {
    if (errno == ELOOP) refuse_link(path);
    return -1;
  }
  if (::fstat(fd.get(), st) != 0 || !S_ISREG(st->st_mode)) {
    throw RuntimeError(fmt::format("{} {} is not a regular file", what, path.string()));
  }
  return fd.release();
}

std::size_t writer_links(const fs::path& path, const struct ::stat& st) {
  const auto rel = below_root(path);
  if (!rel || active_root->archive) return 0;
  std::size_t links = 0;
  for (const fs::path& staging : staging_dirs(active_root->top)) {
    struct stat other {};
    if (::lstat((staging / *rel).c_str(), &other) == 0 && other.st_ino == st.st_ino && other.st_dev == st.st_dev) {
      ++links;
    }
  }
  return links;
}

bool regular_file_at(const fs::path& path) {
  // A link at the top is the caller's choice, as for a directory.
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool reading_archive() { return active_root && active_root->archive; }

const ArchiveTree* active_archive() { return active_root ? active_root->archive : nullptr; }

std::optional<at::Tensor> archive_leaf(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape,
                                       std::string_view key) {
  const auto rel = below_root(path);
  if (!rel || !active_root->archive) return std::nullopt;
  return active_root->archive->leaf(*rel, path, dtype, shape, key, copying_leaves());
}

std::optional<std::string> archive_text(const fs::path& path, std::size_t max_bytes) {
  const auto rel = below_root(path);
  if (!rel || !active_root->archive) return std::nullopt;
  return active_root->archive->text(*rel, path, max_bytes);
}

void read_archive(const fs::path& file, bool writable, c10::function_ref<void()> read) {
  // The archive is opened once: a writer replaces it by a rename, which
  // leaves the file held here whole.
  const ArchiveTree archive(file, writable);
  Root root{normal(file), UniqueFd(), &archive, file.native()};
  const Root* outer = std::exchange(active_root, &root);
  try {
    read();
  } catch (...) {
    active_root = outer;
    throw;
  }
  active_root = outer;
}

void read_tree(const fs::path& top, c10::function_ref<void()> read) {
  if (below_root(top)) {  // a level of the tree already being read
    read();
    return;
  }
  if (regular_file_at(top)) {
    read_archive(top, /*writable=*/false, read);
    return;
  }
  // A writer publishes by exchanging whole trees, then removes the old one:
  // a load that raced with it (the tree it holds was replaced, or a leaf is
  // still linked from the old tree) starts again from the new top.
  constexpr int kAttempts = 200;
  for (int attempt = 1;; ++attempt) {
    Root root{normal(top), UniqueFd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), nullptr, top.native()};
    if (root.fd.get() < 0) {
      throw RuntimeError(
          fmt::format("cannot load a memmap tensordict from {}: {}", top.string(), std::strerror(errno)));
    }
    const Root* outer = std::exchange(active_root, &root);
    try {
      read();
      active_root = outer;
    } catch (const LinkedLeafError&) {
      active_root = outer;
      // A leaf the writer linked from the old tree: wait for it to remove that one.
      if (attempt == kAttempts || (!writer_active(root.top) && still_at(top, root.fd.get()))) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 20)));
      continue;
    } catch (...) {
      active_root = outer;
      if (attempt == kAttempts || still_at(top, root.fd.get())) throw;
      continue;
    }
    // The tree read may have been removed under the load: read the new one.
    if (still_at(top, root.fd.get())) return;
    if (attempt == kAttempts) {
      throw RuntimeError(fmt::format("cannot load a memmap tensordict from {}: it was rewritten {} times during the load",
                                     top.string(), kAttempts));
    }
  }
}

}  // namespace tensordict::detail::memmap
