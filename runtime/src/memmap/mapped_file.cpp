// Tensors over memory-mapped files. The mapping is owned by the tensor's
// storage (a DataPtr whose deleter unmaps), so it lives as long as any view.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/detail/test_hooks.h"

namespace tensordict::detail::memmap {

namespace {

struct Mapping {
  void* addr = nullptr;
  std::size_t length = 0;
  fs::path path;
  // The file mapped: `path` names it only while it is still this inode (a
  // writer may have replaced the tree since).
  dev_t device = 0;
  ino_t inode = 0;
  // Whether the mapping is one leaf's file of a memmap tree (or anonymous
  // memory that memmap_() made); false for a file that holds other things too
  // (a consolidated file), which mapped_path() and is_anonymous_mapping()
  // then do not report.
  bool leaf_file = true;
  ~Mapping() {
    if (addr) ::munmap(addr, length);
  }
};

void release_mapping(void* ctx) { delete static_cast<Mapping*>(ctx); }


at::Tensor wrap(int fd, bool writable, bool shared, std::size_t length, const fs::path& path, at::ScalarType dtype,
                at::IntArrayRef shape, bool leaf_file = true) {
  const int prot = PROT_READ | PROT_WRITE;  // copy-on-write mappings are writable in memory only
  void* addr = ::mmap(nullptr, length, prot, shared && writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    throw RuntimeError(fmt::format("cannot map {} ({} bytes): {}", path.string(), length, std::strerror(errno)));
  }
  struct stat st {};
  ::fstat(fd, &st);
  auto* mapping = new Mapping{addr, length, path.empty() ? path : fs::absolute(path), st.st_dev, st.st_ino, leaf_file};
  return at::for_blob(addr, shape)
      .context(mapping, &release_mapping)
      .options(at::TensorOptions().dtype(dtype).device(at::kCPU))
      .make_tensor();
}

}  // namespace

std::size_t checked_byte_size(at::IntArrayRef shape, at::ScalarType dtype, const fs::path& path) {
  std::size_t n = c10::elementSize(dtype);
  for (int64_t s : shape) {
    if (s < 0)
      throw RuntimeError(fmt::format("{}: negative dimension in shape {}", path.string(), shape_string(shape)));
    const auto u = static_cast<std::size_t>(s);
    if (u != 0 && n > std::numeric_limits<std::size_t>::max() / u) {
      throw RuntimeError(fmt::format("{}: shape {} is too large", path.string(), shape_string(shape)));
    }
    n *= u;
  }
  return n;
}

at::Tensor map_fd(int fd, std::size_t length, const fs::path& path, bool shared) {
  const int64_t shape[] = {static_cast<int64_t>(length)};
  return wrap(fd, true, shared, length, path, at::kByte, shape, /*leaf_file=*/false);
}

namespace {
thread_local bool copy_leaves = false;
}

CopyLeaves::CopyLeaves(bool copy) : before_(std::exchange(copy_leaves, copy || copy_leaves)) {}
CopyLeaves::~CopyLeaves() { copy_leaves = before_; }
bool copying_leaves() { return copy_leaves; }

void refuse_linked_leaf(int fd, const struct ::stat& st, const fs::path& path, std::string_view key) {
  // (writer_links lists the staging directories: only asked for a linked file.)
  if (st.st_nlink <= 1) return;
  test_hook("load: linked data file");
  const std::size_t links = writer_links(path, st);
  // The link count again, after the staging directories were counted: a
  // writer that published meanwhile and removed its old tree (and the link
  // there) leaves fewer links than `st` says, none of them uncounted.
  struct stat now {};
  if (::fstat(fd, &now) != 0) now = st;
  if (now.st_nlink > 1 + links) {
    throw LinkedLeafError(fmt::format(
        "the data file {} of key '{}' has {} hard links: another name may lie outside the tree, and writes through "
        "the mapping would change it; loading refuses it (copy the file to break the link)",
        path.string(), key, now.st_nlink));
  }
}

at::Tensor map_existing(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape, std::string_view key) {
  if (auto leaf = archive_leaf(path, dtype, shape, key)) return *leaf;
  const std::size_t need = checked_byte_size(shape, dtype, path);
  if (need == 0) return at::empty(shape, at::TensorOptions().dtype(dtype));
  bool writable = true;
  struct stat st {};
  const std::string what = fmt::format("the data file of key '{}'", key);
  UniqueFd f(open_tree_file(path, O_RDWR, &st, what));
  if (f.get() < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
    writable = false;
    f = UniqueFd(open_tree_file(path, O_RDONLY, &st, what));
  }
  if (f.get() < 0) {
    throw RuntimeError(fmt::format("cannot open the data file {} of key '{}' ({} bytes of {} {} expected): {}",
                                         path.string(), key, need, c10::toString(dtype), shape_string(shape),
                                         std::strerror(errno)));
  }
  refuse_linked_leaf(f.get(), st, path, key);
  // A file without any write permission bit is read-only even to root (who
  // could open it read/write anyway): map it copy-on-write.
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) writable = false;
  const auto have = static_cast<std::size_t>(st.st_size);
  if (have < need) {
    throw RuntimeError(
        fmt::format("the data file {} of key '{}' is truncated: it has {} bytes, shape {} of {} needs {} bytes",
                    path.string(), key, have, shape_string(shape), c10::toString(dtype), need));
  }
  if (copy_leaves) {
    // Read now: a truncation of the file by another process later cannot
    // raise SIGBUS on a read of this tensor (LoadOptions::copy).
    at::Tensor out = at::empty(shape, at::TensorOptions().dtype(dtype));
    auto* p = static_cast<char*>(out.data_ptr());
    std::size_t done = 0;
    while (done < need) {
      const ssize_t n = ::pread(f.get(), p + done, need - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw RuntimeError(fmt::format("the data file {} of key '{}' is truncated: it ended after {} bytes while "
                                       "being read, shape {} of {} needs {} bytes",
                                       path.string(), key, done, shape_string(shape), c10::toString(dtype), need));
      }
      done += static_cast<std::size_t>(n);
    }
    return out;
  }
  return wrap(f.get(), writable, true, need, path, dtype, shape);
}

at::Tensor map_new(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape, bool existsok) {
  const std::size_t need = checked_byte_size(shape, dtype, path);
  refuse_symlink(path);
  if (need == 0) {
    // tensordict writes no file for a tensor without elements.
    if (!existsok && fs::exists(fs::symlink_status(path))) {
      throw RuntimeError(fmt::format("the file {} already exists (existsok=false)", path.string()));
    }
    return at::empty(shape, at::TensorOptions().dtype(dtype));
  }
  int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
  if (!existsok) flags |= O_EXCL;
  UniqueFd f(::open(path.c_str(), flags, 0666));
  if (f.get() < 0) {
    if (errno == EEXIST)
      throw RuntimeError(fmt::format("the file {} already exists (existsok=false)", path.string()));
    if (errno == ELOOP)
      throw RuntimeError(fmt::format("refusing to write through the symbolic link {}", path.string()));
    throw RuntimeError(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  }
  // Exactly numel * itemsize bytes: drop whatever an older file had beyond.
  if (::ftruncate(f.get(), 0) != 0 || ::ftruncate(f.get(), static_cast<off_t>(need)) != 0) {
    throw RuntimeError(fmt::format("cannot size {} to {} bytes: {}", path.string(), need, std::strerror(errno)));
  }
  return wrap(f.get(), true, true, need, path, dtype, shape);
}

namespace {
const Mapping* mapping_of(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage()) return nullptr;
  const auto& data_ptr = tensor.storage().data_ptr();
  if (data_ptr.get_deleter() != &release_mapping) return nullptr;
  const auto* mapping = static_cast<const Mapping*>(data_ptr.get_context());
  return mapping->leaf_file ? mapping : nullptr;
}
}  // namespace

std::optional<fs::path> mapped_path(const at::Tensor& tensor) {
  const Mapping* mapping = mapping_of(tensor);
  if (!mapping || mapping->path.empty()) return std::nullopt;
  struct stat st {};
  if (::lstat(mapping->path.c_str(), &st) != 0 || st.st_dev != mapping->device || st.st_ino != mapping->inode) {
    return std::nullopt;  // the file at the path is another one now
  }
  return mapping->path;
}

at::Tensor map_anonymous(at::ScalarType dtype, at::IntArrayRef shape) {
  const fs::path label("anonymous shared memory");
  const std::size_t need = checked_byte_size(shape, dtype, label);
  if (need == 0) return at::empty(shape, at::TensorOptions().dtype(dtype));
  // tensordict's _FileHandler: /dev/shm when it takes the size, else the
  // temp directory; the name is gone at once, the mapping keeps the memory.
  std::string error;
  for (const fs::path& dir : {fs::path("/dev/shm"), fs::temp_directory_path()}) {
    std::string name = (dir / fmt::format("tensordict-{}-XXXXXX", ::getpid())).string();
    UniqueFd f(::mkostemp(name.data(), O_CLOEXEC));
    if (f.get() < 0) {
      error = fmt::format("cannot create a file in {}: {}", dir.string(), std::strerror(errno));
      continue;
    }
    ::unlink(name.c_str());
    // posix_fallocate reserves the pages, so a full /dev/shm fails here rather
    // than with SIGBUS on the first write.
    if (const int rc = ::posix_fallocate(f.get(), 0, static_cast<off_t>(need)); rc != 0) {
      error = fmt::format("cannot reserve {} bytes in {}: {}", need, dir.string(), std::strerror(rc));
      continue;
    }
    return wrap(f.get(), true, true, need, fs::path(), dtype, shape);
  }
  throw RuntimeError(fmt::format("memmap_: no shared memory for a tensor of shape {}: {}", shape_string(shape), error));
}

bool is_anonymous_mapping(const at::Tensor& tensor) {
  const Mapping* mapping = mapping_of(tensor);
  return mapping && mapping->path.empty();
}

}  // namespace tensordict::detail::memmap
