// Shared pieces of the memmap persistence (private).
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <c10/util/FunctionRef.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/prefix_lock.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/detail/impl.h"
#include "tensordict/memmap.h"

namespace tensordict::detail::memmap {

namespace fs = std::filesystem;

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// ---- key encoding (key_encoding.cpp) ----------------------------------------------
// tensordict's robust key -> file name encoding: `/ < > : " | ? * \` space, NUL,
// `%`, control chars and DEL become %XX; "" -> "%", "." -> "%2E", ".." -> "%2E%2E".
std::string encode_key(std::string_view key);
// Whether a raw (unencoded, older writers) name stays inside its directory.
bool safe_legacy_key(std::string_view key, bool is_collection);

// ---- files (files.cpp) --------------------------------------------------------------
// Throws if `path` is a symbolic link (writing never follows one).
void refuse_symlink(const fs::path& path);
// Creates `dir` (and parents) if missing; refuses a symlink or a non-directory.
void make_dir(const fs::path& dir);
// Copies the whole of the open file `in` (from its start, whatever its
// position) to the open file `out`; false with errno set on failure.
bool copy_contents(int in, int out);

// The directory a write stages its new tree in, beside the target: created
// with mkdirat and held open, so that everything below it is created through
// its descriptor (the *at calls), never by a path from the root. Whoever may
// write the parent directory can rename the staging directory or put a link
// to another directory in its place: the writer still fills its own directory
// and never writes outside it; publish_dir refuses to publish what is then at
// the name. Paths below path() are taken relative to it (they name the files
// in messages).
class StagingDir {
 public:
  // A fresh, unique sibling of `target` (staging_path), owned by this user.
  explicit StagingDir(const fs::path& target);
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const fs::path& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // `p` (path() or a path below it) relative to path(): "." for path().
  fs::path rel(const fs::path& p) const;
  // Whether path() still names the directory held (not moved, not replaced).
  bool still_named() const;

 private:
  fs::path path_;
  UniqueFd fd_;
};

// A file written under a temporary name beside `path` (refused when `path` is
// a symbolic link) and renamed onto `path` by commit(): readers see the old
// file or the whole new one, never a part. Destroyed without commit() (an
// error on the way), the temporary is removed. Errors name `path`. With
// `staging`, `path` lies below it and is reached through its descriptor.
class AtomicFile {
 public:
  explicit AtomicFile(const fs::path& path, const StagingDir* staging = nullptr);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // The temporary, open for reading and writing.
  int fd() const { return fd_.get(); }
  // Writes all of `content` at byte `offset`.
  void write_at(std::string_view content, std::size_t offset);
  // Sizes the temporary to `bytes` (zeros past the end).
  void resize(std::size_t bytes);
  // `sync`: fsync the file before the rename.
  void commit(bool sync);

 private:
  [[noreturn]] void fail(const char* what, int err);
  fs::path path_;
  fs::path tmp_;
  int at_ = AT_FDCWD;  // the directory `name_` and `tmp_name_` are relative to
  fs::path name_;
  fs::path tmp_name_;
  UniqueFd fd_;
};
// Writes `content` to `path` atomically (an AtomicFile).
void write_file_atomic(const fs::path& path, std::string_view content, bool sync, const StagingDir* staging = nullptr);
// Creates the directory `dir` below `staging` (its parent exists) if missing;
// refuses a symlink or a non-directory.
void make_dir(const StagingDir& staging, const fs::path& dir);
// Creates `path` (which must not exist) holding `bytes` bytes: the data of
// `data` (contiguous, CPU, exactly `bytes` bytes) or zeros when `data` is
// undefined; then, with `sync`, fsyncs it. With `staging`, `path` lies below
// it (reached through its descriptor).
void write_data_file(const fs::path& path, const at::Tensor& data, std::size_t bytes, bool sync,
                     const StagingDir* staging = nullptr);
// Writes the `bytes` bytes of `data` (contiguous, CPU) into the open regular
// file `fd` (`path`, for messages) from byte `offset` on (growing it as
// needed), then, with `sync`, fsyncs it.
void grow_data_file(int fd, const fs::path& path, std::size_t offset, const at::Tensor& data, std::size_t bytes,
                    bool sync);
// Hard-links `from` to `to` (same inode: live mappings of `from` stay valid),
// `to` lying below `staging`. Returns false when the file system refuses hard
// links.
bool link_file(const fs::path& from, const fs::path& to, const StagingDir& staging);
// fsync of a directory (its entries), ignoring file systems that refuse it.
void sync_dir(const fs::path& dir);
// Makes the complete tree `staging` appear at `target` in one step: an atomic
// exchange of the two directories (renameat2 RENAME_EXCHANGE) when `target`
// exists, then the old tree (now at `staging`) is removed. Readers see either
// the old or the new tree, never a mix. File systems without RENAME_EXCHANGE
// get two renames (a moment where `target` is missing: loads fail clearly).
// `sync`: fsync the directories involved. Refused, the old tree left in
// place, when the staging directory's name no longer names the directory
// held (another user of the parent directory moved or replaced it).
void publish_dir(const StagingDir& staging, const fs::path& target, bool sync);
// The directory a prefix names, absolute, without a trailing separator.
fs::path target_dir(const std::string& prefix);
// Publishing replaces `target` with a new directory: refused (ValueError) when
// it is, or contains, the current working directory, which would be deleted.
void refuse_working_directory(const fs::path& target);
// Carries the entries of the tree `old_dir` that the staged tree does not
// write (other programs' files) into it as hard links, keeping the
// directories' modes (write.cpp, "What a writer does with existing content").
void carry_over(const fs::path& old_dir, const StagingDir& staging);
// staging_path, staging_dirs, remove_stale_staging, PrefixLock: core/prefix_lock.h.

// ---- reading a tree that may come from anywhere (tree_access.cpp) ----------------
// A loader reads only inside the tree: no symbolic link below the top is
// followed (tensordict writes none), and only regular files are opened (a FIFO
// would block, a device would read without end). Under read_tree() the paths
// below its top are reached from the top's directory descriptor, component by
// component, never by name from the root of the file system.
//
// Runs `read` (which reads the tree at `top` through the functions below) on
// one version of the tree, whole: when a writer replaced the tree during the
// read, it runs again on the new one. Nested calls (a level of the tree being
// read) run `read` at once.
void read_tree(const fs::path& top, c10::function_ref<void()> read);
// A regular file at `top` is a .tdz archive (archive_tree.h), read in place
// of a directory: the functions below answer from its entries.
//
// Runs `read` on the archive `file` as the tree `file` names; `writable`: its
// stored leaves map the file shared (memmap_like's archive), otherwise
// copy-on-write. read_tree() calls it for a regular file.
void read_archive(const fs::path& file, bool writable, c10::function_ref<void()> read);
// The archive the read on this thread runs over (read_archive), or null.
const class ArchiveTree* active_archive();
// Whether the load on this thread reads an archive (whose levels are not
// memory-mapped directories: is_memmap() is false, as in tensordict).
bool reading_archive();
// When `path` lies in the archive a load on this thread reads, its entry
// there: the leaf of `dtype` and `shape`, or the text (at most `max_bytes`).
// nullopt for a path of a directory tree.
std::optional<at::Tensor> archive_leaf(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape,
                                       std::string_view key);
std::optional<std::string> archive_text(const fs::path& path, std::size_t max_bytes);
// Whether `path` is a regular file (a final symbolic link is followed).
bool regular_file_at(const fs::path& path);
// Whether a write to `prefix` makes an archive: options.archive, else a ".tdz" suffix.
bool writes_archive(const std::string& prefix, const MemmapOptions& options);
// Whether LoadOptions::copy is on for this thread (CopyLeaves).
bool copying_leaves();
// Whether `dir` is a directory of the tree: false when missing or not a
// directory; throws for a symbolic link.
bool tree_dir(const fs::path& dir);
// Whether `path` is an entry of the tree (not following a link).
bool tree_entry_exists(const fs::path& path);
// Opens the regular file `path` of the tree with `flags` (O_RDONLY or O_RDWR;
// O_NOFOLLOW and O_NONBLOCK are added) and fills `st`. Returns -1 with errno
// set when open fails (EACCES... for the caller's fallback), throws for a
// symbolic link or a file that is not regular; messages name `what`.
int open_tree_file(const fs::path& path, int flags, struct ::stat* st, std::string_view what);
// The names of the file `st` of the tree other than `path` that a writer
// made: the same place in a staging directory of the tree (a rewrite links
// the leaves it keeps into the new tree and removes the old tree after
// publishing; a writer killed in between leaves it). 0 outside read_tree().
std::size_t writer_links(const fs::path& path, const struct ::stat& st);
// A data file with more names than the tree and its writers account for (a
// hard link): another name may lie outside the tree. read_tree() retries
// while a writer is removing an old tree, then refuses it.
struct LinkedLeafError : RuntimeError {
  using RuntimeError::RuntimeError;
};
// Throws LinkedLeafError for the open data file `fd` (`st`, `path`, of `key`)
// when it has more names than the tree and its writers account for.
void refuse_linked_leaf(int fd, const struct ::stat& st, const fs::path& path, std::string_view key);
// The largest meta.json read: orders of magnitude above what tensordict
// writes (about 100 bytes per key), far below what would exhaust memory.
inline constexpr std::size_t kMaxMetaBytes = std::size_t{256} << 20;
// The deepest JSON nesting read from a meta.json.
inline constexpr std::size_t kMaxJsonDepth = 512;

// ---- nested (jagged) tensor leaves (jagged.cpp) ------------------------------------
// tensordict's layout: <key>.memmap holds the components' values one after the
// other (each C-contiguous), <key>.shape.memmap their sizes (int64, one row per
// component), and meta.json's "shape" is the shape of those sizes, with
// "is_nested": true.
fs::path jagged_sizes_file(const fs::path& values_file);
struct JaggedParts {
  at::Tensor values;  // 1-D
  at::Tensor sizes;   // int64 [components, dims]
};
// Throws ValueError naming `key` for a nested tensor without
// components (tensordict writes no file for it and drops it when loading).
JaggedParts jagged_parts(const at::Tensor& nested, std::string_view key);
// The nested tensor stored at `values_file` (and its sizes file), `sizes_shape`
// being meta.json's "shape". Loaded into memory: libtorch's C++ API builds
// nested tensors by copying. Errors name the files and `key`.
at::Tensor load_jagged(const fs::path& values_file, at::ScalarType dtype, at::IntArrayRef sizes_shape, std::string_view key);

// ---- memory-mapped storage (mapped_file.cpp) --------------------------------------
// While one is alive on a thread with `copy` (LoadOptions::copy), map_existing
// on that thread reads the file into memory instead of mapping it.
class CopyLeaves {
 public:
  explicit CopyLeaves(bool copy);
  ~CopyLeaves();
  CopyLeaves(const CopyLeaves&) = delete;
  CopyLeaves& operator=(const CopyLeaves&) = delete;

 private:
  bool before_;
};
// A tensor over the first numel*itemsize bytes of `path`, mapped shared (writes
// reach the file) when the file is writable, else copy-on-write. Checks the
// file size first; messages name the path and `key`.
at::Tensor map_existing(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape, std::string_view key);
// numel * itemsize of `shape` and `dtype`, refusing negative dims and overflow
// (errors name `path`).
std::size_t checked_byte_size(at::IntArrayRef shape, at::ScalarType dtype, const fs::path& path);
// The first `length` (> 0) bytes of the open file `fd` (`path`, for
// messages) as a uint8 tensor, mapped shared (writes reach the file) or
// copy-on-write. Not a leaf's file: mapped_path() and is_anonymous_mapping()
// do not report it, and memmap() copies tensors viewing it.
at::Tensor map_fd(int fd, std::size_t length, const fs::path& path, bool shared);
// Creates (or with existsok reuses) `path` sized for the tensor and maps it
// shared; the contents are zero for a new file.
at::Tensor map_new(const fs::path& path, at::ScalarType dtype, at::IntArrayRef shape, bool existsok);
// The file a tensor's storage maps; nullopt for ordinary memory, anonymous
// mappings and a file no longer at its path (a rewrite replaced it).
std::optional<fs::path> mapped_path(const at::Tensor& tensor);
// A tensor in shared memory that no name reaches (memmap_() without a prefix).
at::Tensor map_anonymous(at::ScalarType dtype, at::IntArrayRef shape);
bool is_anonymous_mapping(const at::Tensor& tensor);

// ---- meta.json (meta.cpp) -----------------------------------------------------------
inline constexpr std::string_view kTensorDictType = "<class 'tensordict._td.TensorDict'>";
inline constexpr std::string_view kLazyStackType = "<class 'tensordict._lazy.LazyStackedTensorDict'>";
inline constexpr std::string_view kNonTensorDataType = "<class 'tensordict.tensorclass.NonTensorData'>";
inline constexpr std::string_view kNonTensorStackType = "<class 'tensordict.tensorclass.NonTensorStack'>";

// The newest layout version this reader knows (tensordict's "_format_version";
// a meta.json without one is version 0).
inline constexpr int64_t kFormatVersion = 1;

// Parses JSON metadata read from `file` (a meta.json, a consolidated file's
// metadata), bounded as kMaxJsonDepth says; errors name `file`.
Json parse_json(std::string_view text, const fs::path& file);
// The text of `file` (a metadata file of the tree at `dir`), at most
// kMaxMetaBytes; RuntimeError naming it when it is missing, unreadable or larger.
std::string read_text(const fs::path& file, const fs::path& dir);
// Reads and parses dir/meta.json; errors name the file.
Json read_meta(const fs::path& dir);
// The JSON text written to meta.json (compact, as tensordict with orjson).
// Refuses (ValueError naming `file`, its final place, and `what`, the value it
// holds: "the value of key 'a'") what read_meta would refuse: a text over
// kMaxMetaBytes, and strings that are not valid UTF-8 (which JSON cannot hold).
std::string dump_meta(const Json& meta, const fs::path& file, std::string_view what);
// The device string of a level ("cpu", or "None" without a device).
std::string device_string(std::optional<at::Device> device);

// ---- reading metadata (load.cpp) ------------------------------------------------------
// A list of non-negative sizes; errors name `file` and `what` ("the shape of key 'a'").
std::vector<int64_t> read_shape(const Json& value, const fs::path& file, std::string_view what);
// Whether `sizes` begins with `prefix` (a leaf's shape with the batch size).
bool starts_with(at::IntArrayRef sizes, at::IntArrayRef prefix);
// The dtype names a reader accepts, for messages.
std::string known_dtypes();
// One dim name (a string or null) per batch dim, checked as tensordict checks
// names; errors name `file` and `what`.
Names read_dim_names(const Json& value, const fs::path& file, std::string_view what, std::size_t batch_dims);

// ---- memmap state and writing (write.cpp) -------------------------------------------
// Records that `impl` is memory-mapped at `dir` (is_memmap, saved_path; an
// empty `dir`: anonymous shared memory, no saved path).
void mark_memmapped(const std::shared_ptr<TensorDictImpl>& impl, const fs::path& dir);
// The meta.json of a non-tensor entry (NonTensorData or NonTensorStack).
Json non_tensor_meta(const NonTensorData& data);
// An indexed write (set_at_, index_put_, update_at_) changes the non-tensor
// entry `key` of the memory-mapped `level` from `before` to `after`: a
// NonTensorStack's meta.json is rewritten (atomically, fsynced) so that the
// files hold what the tensordict holds; one value for the whole batch is
// shared and cannot change (tensordict 0.15 refuses it: RuntimeError, before
// anything is written). Anonymous shared memory has no file to write.
void write_non_tensor_entry(const TensorDictImpl& level, const NestedKey& key, const NonTensorData& before,
                            const NonTensorData& after);


enum class Mode { InPlace, Copy, Like };
// Writes the tree of `impl` at `prefix`; the levels `tags` names are written in
// tensorclass layout. Returns the written (in place: the same) tree, locked.
std::shared_ptr<TensorDictImpl> write_tree(const std::shared_ptr<TensorDictImpl>& impl, const std::string& prefix,
                                           Mode mode, const MemmapOptions& options,
                                           const MemmapClassTags* tags = nullptr);

// ---- writing .tdz archives (archive_write.cpp) ----------------------------------
// Writes the tree of `impl` as the archive `prefix` (Copy or Like), through a
// directory staged beside it, and returns the archive loaded (leaves mapped
// copy-on-write; writable for Like, as tensordict's memmap_like).
std::shared_ptr<TensorDictImpl> write_archive(const std::shared_ptr<TensorDictImpl>& impl, const std::string& prefix,
                                              Mode mode, const MemmapOptions& options, const MemmapClassTags* tags);

// ---- growing a saved tree (append.cpp) ----------------------------------------
// append_memmap: the tree at `prefix` grows by the rows of `rows`.
void append_tree(const std::string& prefix, const TensorDict& rows, const MemmapOptions& options);

// ---- loading (load.cpp) --------------------------------------------------------
TensorDict load_level(const fs::path& dir, std::optional<at::Device> device);
// Whether the `_type` string "<class 'module.Class'>" names the class `cls`.
bool type_is(const std::string& type, std::string_view cls);
// The class name of a `_type` string: "<class 'module.Name'>" -> "Name".
std::string bare_class_name(const std::string& type);
// The sub-directory of the collection entry `key` of the level `dir`: the
// encoded name, else an older writer's raw one; errors name the meta.json.
fs::path entry_dir(const fs::path& dir, const std::string& key);
// The data file of the leaf `key` of the level `dir`: the encoded name, else
// an older writer's raw one.
fs::path leaf_file(const fs::path& dir, const std::string& key);

}  // namespace tensordict::detail::memmap
