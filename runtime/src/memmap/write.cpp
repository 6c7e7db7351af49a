// memmap_, memmap, memmap_like, save: writing a tree in tensordict's layout.
//
// Three passes: plan (create directories, write non-tensor levels, queue one
// job per tensor leaf), run the jobs (optionally on threads), then assemble the
// results and write each level's meta.json, children before parents, so that a
// level's meta.json only appears once everything below it is complete.
//
// Besides TensorDict levels, two layouts of FORMATS.md are written here: a
// LazyStackedTensorDict (meta.json with _type and stack_dim, one member per
// sub-directory 0/, 1/, ...) and a tensorclass level (meta.json with _type and
// the non-tensor fields, tensor fields in _tensordict/), chosen by the
// MemmapClassTags a generated tensorclass passes.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "core/kind_ops.h"
#include "kinds/dense/dense_impl.h"
#include "core/format.h"
#include "kinds/lazy/lazy_impl.h"
#include "kinds/dense/map_leaves.h"
#include "core/nesting.h"
#include "core/unbatched.h"
#include "memmap/memmap_detail.h"
#include "tensordict/base.h"
#include "tensordict/detail/test_hooks.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"
#include "tensordict/remove_tree.h"

namespace tensordict {

namespace detail::memmap {

// ---- memmap state (on the impl: TensorDictImpl::memmap_dir) ----------------------------

void mark_memmapped(const std::shared_ptr<TensorDictImpl>& impl, const fs::path& dir) {
  // From now on a non-tensor write into a mapped level reaches its files.
  set_memmap_non_tensor_writer(write_non_tensor_entry);
  impl->set_memmap_dir(dir.empty() ? std::string() : fs::absolute(dir).string());
}

Json non_tensor_meta(const NonTensorData& data) {
  Json meta = Json::object();
  if (data.is_stack()) {
    meta["_type"] = kNonTensorStackType;
    meta["stack_dim"] = 0;
    meta["device"] = nullptr;
    meta["data"] = data.data();
  } else {
    meta["_type"] = kNonTensorDataType;
    meta["data"] = data.data();
    meta["_metadata"] = nullptr;
  }
  return meta;
}

// ---- writer -----------------------------------------------------------------------

namespace {

struct Job {
  fs::path file;    // in the staging tree
  fs::path target;  // where it ends up
  at::Tensor source;
  NestedKey key;
  fs::path link_from;  // an existing file to hard-link instead of writing
  std::exception_ptr error;
  bool always_data = false;  // written even by memmap_like (a jagged leaf's sizes)
};

struct Level;

struct Entry {
  std::string key;
  Value value;                   // the source value (non-tensor data: also the result)
  std::size_t job = SIZE_MAX;    // tensor leaf written by a job
  at::Tensor kept;               // tensor leaf already mapped at its file
  std::unique_ptr<Level> child;  // nested tensordict
  std::size_t sizes_job = SIZE_MAX;  // a jagged leaf: the job of its sizes file (`job` writes its values)
};

struct Level {
  fs::path dir;  // where this level's meta.json goes (<class dir>/_tensordict for a tensorclass), in the staging tree
  fs::path target;  // where `dir` ends up
  fs::path class_target;  // where `class_dir` ends up
  std::shared_ptr<TensorDictImpl> source;
  std::vector<Entry> entries;
  // A lazy stack: its stack dim and its members (dir/0, dir/1, ...).
  std::optional<int64_t> stack_dim;
  std::vector<std::unique_ptr<Level>> members;
  // A tensorclass level: its tag and its own directory (which holds its meta.json).
  const MemmapClassTag* tag = nullptr;
  fs::path class_dir;
};

// What the parent's meta.json says of a nested level: the bare class name.
std::string entry_type(const Level& level) {
  if (!level.tag) return std::string(level.source->type_name());
  return bare_class_name(level.tag->type);
}

// A tensor leaf's entry; for a jagged leaf `t` is its values and `sizes` the
// components' sizes, whose shape meta.json gives.
Json leaf_meta(const at::Tensor& t, const at::Tensor& sizes = {}) {
  Json entry = Json::object();
  entry["device"] = "cpu";
  entry["shape"] = sizes.defined() ? sizes.sizes().vec() : t.sizes().vec();
  entry["dtype"] = "torch." + std::string(dtype_name(t.scalar_type()));
  entry["is_nested"] = sizes.defined();
  return entry;
}

std::size_t nbytes(const at::Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// Whether the bytes of `t` are exactly the file its storage maps, in order:
// only then is the file itself (a hard link) the data to save. A view
// (a slice, a transpose, another offset) is written as a new file.
bool covers_its_file(const at::Tensor& t) {
  return t.is_contiguous() && t.storage_offset() == 0 && nbytes(t) == t.storage().nbytes();
}

bool is_reserved(const std::string& key) { return key == "shape" || key == "device" || key == "_type"; }

// tensordict's "_names": one string or null per batch dim; null when no dim is named.
Json names_json(const Names& names) {
  Json out = Json::array();
  bool named = false;
  for (const auto& name : names) {
    named = named || name.has_value();
    out.push_back(name ? Json(*name) : Json(nullptr));
  }
  return named ? out : Json(nullptr);
}


// Crash safety: the whole tree is written into a staging directory beside
// the target (data files, then each level's meta.json, children before
// parents), synced, then published in one atomic directory exchange. A
// writer killed at any point leaves the previous complete tree in place (and
// a staging directory that the next write removes).
class Writer {
 public:
  Writer(Mode mode, const MemmapOptions& options, const MemmapClassTags* tags, const StagingDir& staging)
      : mode_(mode), options_(options), tags_(tags), staging_(staging) {}

  std::unique_ptr<Level> plan(const std::shared_ptr<TensorDictImpl>& impl, const fs::path& class_or_dir,
                              const fs::path& class_or_target, std::vector<std::string>& path) {
    NestingGuard guard("memmap");
    auto level = std::make_unique<Level>();
    level->source = impl;
    fs::path dir = class_or_dir;
    fs::path target = class_or_target;
    if (tags_) {
      if (auto it = tags_->find(path); it != tags_->end()) {
        level->tag = &it->second;
        level->class_dir = class_or_dir;
        level->class_target = class_or_target;
        make_dir(staging_, class_or_dir);
        dir = class_or_dir / "_tensordict";
        target = class_or_target / "_tensordict";
      }
    }
    level->dir = dir;
    level->target = target;
    refuse_symlink(target);
    if (const auto* lazy = as_stacked(*impl)) {
      // Each member is a full collection of its own (keys and shapes may differ).
      make_dir(staging_, dir);
      level->stack_dim = lazy->stack_dim();
      const auto& members = lazy->members();
      for (std::size_t i = 0; i < members.size(); ++i) {
        path.push_back(std::to_string(i));
        level->members.push_back(plan(members[i].impl(), dir / std::to_string(i), target / std::to_string(i), path));
        path.pop_back();
      }
      return level;
    }
    if (mode_ == Mode::InPlace && !kind_ops(*impl).owns_entries) {
      throw RuntimeError(
          fmt::format("memmap_ works in place on dense TensorDicts only (and lazy stacks of them); {} is a {}: "
                      "use memmap()",
                      path.empty() ? std::string("the tensordict") : NestedKey(path).repr(), impl->type_name()));
    }
    if (mode_ == Mode::InPlace && impl->marked_shared()) {
      // tensordict: a level is in shared memory or memory-mapped, not both.
      throw RuntimeError(fmt::format("memmap_: memmap and shared memory are mutually exclusive features{}.",
                                     path.empty() ? std::string() : " (key " + NestedKey(path).repr() + ")"));
    }
    make_dir(staging_, dir);
    impl->for_each([&](const std::string& key, const Value& value) {
      path.push_back(key);
      const NestedKey nested(path);
      if (is_reserved(key)) {
        throw ValueError(fmt::format(
            "cannot memmap key {} to {}: '{}' is reserved in meta.json (shape, device and _type describe the level); "
            "rename the key",
            nested.repr(), target.string(), key));
      }
      if (value.is_unbatched()) refuse_memmap_unbatched(NestedKey(key));
      Entry entry{key, value, SIZE_MAX, {}, nullptr};
      const std::string name = encode_key(key);
      if (value.is_tensor()) {
        plan_leaf(entry, value.tensor(), dir / (name + ".memmap"), target / (name + ".memmap"), nested);
      } else if (value.is_non_tensor()) {
        const fs::path sub = dir / name;
        make_dir(staging_, sub);
        const std::string text = dump_meta(non_tensor_meta(value.non_tensor()), target / name / "meta.json",
                                           "the value of key " + nested.repr());
        write_file_atomic(sub / "meta.json", text, options_.sync, &staging_);
      } else {
        entry.child = plan(value.impl(), dir / name, target / name, path);
      }
      level->entries.push_back(std::move(entry));
      path.pop_back();
    });
    return level;
  }

  void run_jobs() {
    const std::size_t n = jobs_.size();
    auto work = [&](std::size_t i) {
      Job& job = jobs_[i];
      try {
        const std::size_t bytes = nbytes(job.source);
        if (bytes == 0) return;  // tensordict writes no file for an empty tensor
        if (!job.link_from.empty() && link_file(job.link_from, job.file, staging_)) return;
        at::Tensor data;
        if (mode_ != Mode::Like || !job.link_from.empty() || job.always_data) {
          data = job.source.cpu().resolve_conj().resolve_neg().contiguous();
        }
        write_data_file(job.file, data, bytes, options_.sync, &staging_);
      } catch (...) {
        job.error = std::current_exception();
      }
    };
    const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(std::max(options_.num_threads, 0)), n);
    if (threads <= 1) {
      for (std::size_t i = 0; i < n; ++i) work(i);
    } else {
      std::atomic<std::size_t> next{0};
      std::vector<std::thread> pool;
      pool.reserve(threads);
      for (std::size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
          for (std::size_t i = next++; i < n; i = next++) work(i);
        });
      }
      for (auto& th : pool) th.join();
    }
    for (auto& job : jobs_) {
      if (!job.error) continue;
      try {
        std::rethrow_exception(job.error);
      } catch (...) {
        rethrow_for_key("memmap", job.key);
      }
    }
  }

  // Writes the meta.json files of `level` (children first; for a tensorclass
  // also the class's meta.json above it) into the staging tree.
  void write_meta(Level& level) {
    if (level.stack_dim) {
      for (auto& member : level.members) write_meta(*member);
      Json meta = Json::object();
      meta["_type"] = kLazyStackType;
      meta["stack_dim"] = *level.stack_dim;
      write_file_atomic(level.dir / "meta.json", dump_meta(meta, level.target / "meta.json", "the lazy stack"),
                        options_.sync, &staging_);
    } else {
      const TensorDictImpl& src = *level.source;
      Json meta = Json::object();
      // Keys are unique: appended directly (ordered_json's operator[] searches
      // its keys linearly, quadratic over a level's keys).
      auto& members = meta.get_ref<Json::object_t&>();
      members.reserve(level.entries.size() + 4);
      for (Entry& entry : level.entries) {
        if (entry.child) {
          write_meta(*entry.child);
          members.emplace_back(entry.key, Json{{"type", entry_type(*entry.child)}});
        } else if (entry.value.is_non_tensor()) {
          members.emplace_back(entry.key,
                               Json{{"type", entry.value.non_tensor().is_stack() ? "NonTensorStack" : "NonTensorData"}});
        } else {
          const at::Tensor sizes = entry.sizes_job != SIZE_MAX ? jobs_[entry.sizes_job].source : at::Tensor();
          members.emplace_back(entry.key, leaf_meta(entry.job != SIZE_MAX ? jobs_[entry.job].source : entry.kept, sizes));
        }
      }
      meta["shape"] = src.batch_size().vec();
      meta["device"] = "cpu";
      meta["_type"] = kTensorDictType;
      // As tensordict: a key named "_names" keeps its entry, and the names are not written.
      if (!meta.contains("_names")) {
        if (Json names = names_json(src.names()); !names.is_null()) meta["_names"] = std::move(names);
      }
      write_file_atomic(level.dir / "meta.json",
                        dump_meta(meta, level.target / "meta.json", "the level's keys and dim names"), options_.sync,
                        &staging_);
    }
    if (level.tag) {
      Json meta = Json::object();
      meta["_type"] = level.tag->type;
      for (const auto& [key, value] : level.tag->fields.items()) meta[key] = value;
      write_file_atomic(level.class_dir / "meta.json",
                        dump_meta(meta, level.class_target / "meta.json", "the tensorclass's non-tensor fields"),
                        options_.sync, &staging_);
    }
  }

  // After publishing: builds (or, in place, updates) the tensordict of
  // `level` over the files at their final place.
  std::shared_ptr<TensorDictImpl> finish(Level& level) {
    return level.stack_dim ? finish_lazy(level) : finish_dense(level);
  }

  // Entries of the tree being replaced that the new tree does not write
  // (files of other programs) are carried into the new tree as hard links, so publishing loses nothing:
  // whatever cannot be carried (another user's file we may not link, a mount
  // point) makes the write fail before anything is replaced. Directories keep
  // their modes. Not carried: tensordict's own files of removed keys (their
  // data files, a level's meta.json, a level directory left empty without
  // them), a dead writer's temporaries, and the member
  // directories of a lazy stack past its new member count (loading counts the
  // members by their directories, so a stale one would come back as data).
  // The old tree is walked through descriptors (each directory opened with
  // O_NOFOLLOW from its parent's): a directory swapped for a link meanwhile
  // is refused, never followed out of the tree. Every directory of the old
  // tree must be one this user may remove entries from, or the old tree
  // would stay behind (as a hidden staging directory) once the new one is
  // published: refused before anything is replaced.
  // The new side is reached through the staging directory's descriptor
  // (StagingDir): never by a path another user of the parent could redirect.
  static void carry_over(const fs::path& old_dir, const StagingDir& staging) {
    UniqueFd fd(::open(old_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() >= 0) carry_over_at(fd.get(), old_dir, staging.fd(), staging.path());
  }

 private:
  static void carry_over_at(int old_fd, const fs::path& old_dir, int new_fd, const fs::path& new_dir) {
    struct stat old_st {};
    if (::fstat(old_fd, &old_st) != 0) cannot_carry(old_dir, "stat", errno);
    if (::faccessat(old_fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
      throw RuntimeError(fmt::format("cannot write the tensordict over the existing tree: this user may not remove "
                                     "the entries of its directory {} ({}), so the old tree could not be removed "
                                     "once the new one is published",
                                     old_dir.string(), std::strerror(errno)));
    }
    if (::fchmod(new_fd, old_st.st_mode & 07777) != 0) cannot_carry(old_dir, "chmod", errno);
    const bool lazy_level = is_lazy_level(new_fd, new_dir);
    std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(::dup(old_fd)), &::closedir);
    if (!listing) cannot_carry(old_dir, "opendir", errno);
    while (const dirent* entry = ::readdir(listing.get())) {
      const std::string s = entry->d_name;
      if (s == "." || s == "..") continue;
      if (s.rfind(".meta.json.tmp", 0) == 0) continue;  // a dead writer's temporary
      if (lazy_level && s.find_first_not_of("0123456789") == std::string::npos) continue;
      const fs::path source = old_dir / s;
      struct stat st {};
      if (::fstatat(old_fd, s.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
      if (st.st_dev != old_st.st_dev) {
        throw RuntimeError(fmt::format(
            "cannot write the tensordict over {}: {} is a mount point inside the tree; unmount or move it first",
            old_dir.string(), source.string()));
      }
      const fs::path dest = new_dir / s;
      struct stat dest_st {};
      const bool dest_exists = ::fstatat(new_fd, s.c_str(), &dest_st, AT_SYMLINK_NOFOLLOW) == 0;
      if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(::openat(old_fd, s.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub.get() < 0) cannot_carry(source, "open (it changed during the write)", errno);
        if (!dest_exists && ::mkdirat(new_fd, s.c_str(), 0700) != 0) cannot_carry(source, "mkdir", errno);
        if (!dest_exists || S_ISDIR(dest_st.st_mode)) {
          UniqueFd new_sub(::openat(new_fd, s.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
          if (new_sub.get() < 0) cannot_carry(source, "open of its copy", errno);
          carry_over_at(sub.get(), source, new_sub.get(), dest);
        }
        // The level of a removed key carried nothing of another program: gone.
        if (!dest_exists) ::unlinkat(new_fd, s.c_str(), AT_REMOVEDIR);  // fails, keeping it, unless empty
        continue;
      }
      if (dest_exists) continue;  // the new tree's own file replaces it
      // tensordict's own files (data and metadata) of a key the new tree no
      // longer has.
      if (S_ISREG(st.st_mode) && (s == "meta.json" || s.ends_with(".memmap"))) continue;
      // Any non-directory (a file, a link, a FIFO, a socket) is carried as a
      // hard link to the same inode (linkat follows no link); a file we may
      // not link is copied.
      if (::linkat(old_fd, s.c_str(), new_fd, s.c_str(), 0) == 0) continue;
      const int err = errno;
      if (S_ISREG(st.st_mode) && copy_file_at(old_fd, s.c_str(), new_fd)) continue;
      cannot_carry(source, "link", err);
    }
  }

  // Copies the regular file `name` of the directory `dir` to the new file
  // `name` of the directory `dest_dir`.
  static bool copy_file_at(int dir, const char* name, int dest_dir) {
    UniqueFd in(::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (in.get() < 0 || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    UniqueFd out(::openat(dest_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 07777));
    return out.get() >= 0 && copy_contents(in.get(), out.get());
  }

  [[noreturn]] static void cannot_carry(const fs::path& entry, const char* what, int err) {
    throw RuntimeError(fmt::format(
        "cannot write the tensordict over the existing tree: {} is not the tensordict's own and cannot be kept in "
        "the new tree ({} failed: {}); move or remove it first",
        entry.string(), what, std::strerror(err)));
  }

  // Whether the staged level `fd` (`dir`) is a lazy stack (its meta.json is written).
  static bool is_lazy_level(int fd, const fs::path& dir) {
    try {
      UniqueFd file(::openat(fd, "meta.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      struct stat st {};
      if (file.get() < 0 || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
          static_cast<std::size_t>(st.st_size) > kMaxMetaBytes) {
        return false;
      }
      std::string text(static_cast<std::size_t>(st.st_size), '\0');
      if (::pread(file.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return false;
      const Json meta = parse_json(text, dir / "meta.json");
      return meta.is_object() && meta.contains("_type") && meta["_type"].is_string() &&
             meta["_type"].get<std::string>() == kLazyStackType;
    } catch (const std::exception&) {
      return false;  // not a level of the new tree (a carried directory)
    }
  }

  std::shared_ptr<TensorDictImpl> finish_lazy(Level& level) {
    std::vector<TensorDict> members;
    for (auto& member : level.members) members.emplace_back(finish(*member));
    // In place the members were updated in place: the stack already holds them.
    std::shared_ptr<TensorDictImpl> out =
        mode_ == Mode::InPlace ? level.source : std::make_shared<LazyStackedImpl>(std::move(members), *level.stack_dim);
    mark_memmapped(out, level.target);
    return out;
  }

  std::shared_ptr<TensorDictImpl> finish_dense(Level& level) {
    const TensorDictImpl& src = *level.source;
    std::shared_ptr<TensorDictImpl> out =
        mode_ == Mode::InPlace ? level.source
                               : std::make_shared<DenseImpl>(src.batch_size().vec(), at::Device(at::kCPU), src.names());
    for (Entry& entry : level.entries) {
      if (entry.child) {
        auto child = finish(*entry.child);
        if (mode_ != Mode::InPlace) out->insert(entry.key, Value(TensorDict(child)));
      } else if (entry.value.is_non_tensor()) {
        if (mode_ != Mode::InPlace) out->insert(entry.key, entry.value);
      } else {
        at::Tensor t = entry.kept;
        if (entry.sizes_job != SIZE_MAX) {
          const Job& job = jobs_[entry.job];
          t = load_jagged(job.target, job.source.scalar_type(), jobs_[entry.sizes_job].source.sizes(), entry.key);
        } else if (entry.job != SIZE_MAX) {
          const Job& job = jobs_[entry.job];
          t = map_existing(job.target, job.source.scalar_type(), job.source.sizes(), entry.key);
        }
        out->insert(entry.key, Value(std::move(t)));
      }
    }
    if (mode_ == Mode::InPlace) out->set_meta(src.batch_size().vec(), at::Device(at::kCPU), src.names());
    mark_memmapped(out, level.target);
    return out;
  }

  void plan_leaf(Entry& entry, const at::Tensor& tensor, const fs::path& file, const fs::path& target,
                 const NestedKey& key) {
    // Never replace a symbolic link of the existing tree (a leaf file linked
    // elsewhere): refuse, as writing through it would have been refused.
    refuse_symlink(target);
    if (tensor.is_nested()) {
      plan_jagged(entry, tensor, file, target, key);
      return;
    }
    Job job{file, target, tensor.detach(), key, {}, nullptr};
    if (mode_ != Mode::Like) {
      if (auto existing = mapped_path(tensor)) {
        if (*existing == fs::absolute(target) && covers_its_file(tensor)) {
          // Already memory-mapped at its place: the new tree gets the same
          // file (a hard link), and the tensor keeps its mapping.
          entry.kept = tensor;
          job.link_from = target;
          jobs_.push_back(std::move(job));
          return;
        }
        if (*existing != fs::absolute(target) && !options_.copy_existing) {
          throw RuntimeError(
              fmt::format("key {} is already memory-mapped to {}, not to {}; pass copy_existing=true to copy it there",
                          key.repr(), existing->string(), target.string()));
        }
      }
    }
    if (!options_.existsok && fs::exists(fs::symlink_status(target))) {
      throw RuntimeError(fmt::format("the file {} already exists (existsok=false)", target.string()));
    }
    entry.job = jobs_.size();
    jobs_.push_back(std::move(job));
  }

  // A jagged leaf: two new files (values, sizes), as tensordict writes them.
  void plan_jagged(Entry& entry, const at::Tensor& tensor, const fs::path& file, const fs::path& target, const NestedKey& key) {
    const fs::path sizes_target = jagged_sizes_file(target);
    refuse_symlink(sizes_target);
    for (const auto& t : {target, sizes_target}) {
      if (!options_.existsok && fs::exists(fs::symlink_status(t))) {
        throw RuntimeError(fmt::format("the file {} already exists (existsok=false)", t.string()));
      }
    }
    auto [values, sizes] = jagged_parts(tensor.detach(), key.repr());
    entry.job = jobs_.size();
    jobs_.push_back(Job{file, target, std::move(values), key, {}, nullptr});
    entry.sizes_job = jobs_.size();
    jobs_.push_back(Job{jagged_sizes_file(file), sizes_target, std::move(sizes), key, {}, nullptr, /*always_data=*/true});
  }

  Mode mode_;
  MemmapOptions options_;
  const MemmapClassTags* tags_;
  const StagingDir& staging_;
  std::vector<Job> jobs_;
};

}  // namespace

void carry_over(const fs::path& old_dir, const StagingDir& staging) { Writer::carry_over(old_dir, staging); }

// Publishing replaces the target directory with a new one: the old one,
// removed, would leave a process working inside it in a deleted directory.
void refuse_working_directory(const fs::path& target) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return;
  const auto rel = cwd.lexically_relative(target);
  if (!rel.empty() && *rel.begin() != "..") {
    throw ValueError(fmt::format(
        "memmap cannot replace {}: it is (or contains) the current working directory, which the write would delete; "
        "name a sub-directory",
        target.string()));
  }
}

// The directory a prefix names, absolute, without a trailing separator.
fs::path target_dir(const std::string& prefix) {
  fs::path p = fs::absolute(fs::path(prefix)).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (p == p.root_path() || p.filename() == "..") {
    throw ValueError(fmt::format("memmap cannot write a tensordict to {}: name a directory", prefix));
  }
  return p;
}

std::shared_ptr<TensorDictImpl> write_tree(const std::shared_ptr<TensorDictImpl>& impl, const std::string& prefix,
                                           Mode mode, const MemmapOptions& options, const MemmapClassTags* tags) {
  if (prefix.empty()) throw ValueError("memmap needs a directory prefix, got an empty path");
  if (mode != Mode::InPlace && writes_archive(prefix, options)) return write_archive(impl, prefix, mode, options, tags);
  if (options.compression) {
    throw ValueError(
        "compression is only supported when writing a memmap archive (set MemmapOptions::archive or use a '.tdz' "
        "prefix)");
  }
  const fs::path target = target_dir(prefix);
  refuse_symlink(target);
  {
    std::error_code ec;
    const auto st = fs::symlink_status(target, ec);
    if (fs::exists(st) && !fs::is_directory(st)) {
      throw RuntimeError(
          fmt::format("cannot write a tensordict level to {}: it exists and is not a directory", target.string()));
    }
  }
  refuse_working_directory(target);
  // The prefix's parents are the caller's choice (a link among them is
  // followed); only the tree itself must contain no link.
  {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (!fs::is_directory(target.parent_path())) {
      throw RuntimeError(fmt::format("cannot write the tensordict to {}: cannot create its parent directory{}",
                                           target.string(), ec ? ": " + ec.message() : std::string()));
    }
  }
  // One writer of a prefix at a time: otherwise two writers' trees mix (each
  // maps its leaves back from the published tree, which the other may have
  // replaced) and one could remove the other's staging directory.
  PrefixLock lock(target, options.lock_timeout);
  remove_stale_staging(target);
  StagingDir staging(target);
  test_hook("memmap: staging created");
  Writer writer(mode, options, tags, staging);
  try {
    std::vector<std::string> path;
    auto root = writer.plan(impl, staging.path(), target, path);
    writer.run_jobs();
    writer.write_meta(*root);
    carry_over(target, staging);
    publish_dir(staging, target, options.sync);
    auto out = writer.finish(*root);
    // tensordict locks a memory-mapped tensordict (every level).
    TensorDict(out).lock_();
    return out;
  } catch (...) {
    std::error_code ec;
    remove_tree(staging.path(), ec);
    throw;
  }
}

}  // namespace detail::memmap

using namespace detail::memmap;

TensorDict& TensorDict::memmap_(const std::string& prefix, const MemmapOptions& options) {
  if (options.archive.value_or(false)) {
    throw ValueError("memmap_ writes a directory (tensordict's memmap_ has no archive): write an archive with memmap() "
                     "or save()");
  }
  write_tree(impl_, prefix, Mode::InPlace, options);
  // The leaves now map their files: no longer views of a consolidated storage
  // (tensordict's rule).
  impl_->set_consolidated_storage(at::Tensor());
  return *this;
}

// A lazy stack is written in its layout and comes back a lazy stack.
TensorDict TensorDict::memmap(const std::string& prefix, const MemmapOptions& options) const {
  return TensorDict(write_tree(impl_, prefix, Mode::Copy, options));
}

TensorDict TensorDict::memmap_like(const std::string& prefix, const MemmapOptions& options) const {
  return TensorDict(write_tree(impl_, prefix, Mode::Like, options));
}

TensorDict memmap_tensorclass(const TensorDict& td, const std::string& prefix, const MemmapClassTags& tags,
                              const MemmapOptions& options, MemmapContent content) {
  return TensorDict(
      write_tree(td.impl(), prefix, content == MemmapContent::Like ? Mode::Like : Mode::Copy, options, &tags));
}

TensorDict TensorDict::save(const std::string& prefix, const MemmapOptions& options) const {
  return memmap(prefix, options);
}

bool TensorDict::is_memmap() const { return impl_->memmap_dir().has_value(); }

std::optional<std::string> TensorDict::saved_path() const {
  const auto& dir = impl_->memmap_dir();
  if (!dir || dir->empty()) return std::nullopt;
  return *dir;
}

}  // namespace tensordict
