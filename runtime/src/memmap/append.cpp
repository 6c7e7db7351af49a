// append_memmap: growing a saved tree along its first batch dim, as replay
// buffers and collectors do (tensordict's append_memmap).
//
// Under the prefix's lock, on one version of the tree: the tree is loaded (it
// must load, as tensordict maps it first) and walked beside the rows; every
// check runs before the first byte is written. Then, as every write of a tree
// here (docs/reliability.md, "Crash safety of writes"), a staging directory beside the
// prefix receives the new tree: each level's meta.json with the new row
// count, each data file as a hard link grown in place past its saved rows,
// the files kept as they are (non-tensor levels, tensorclass levels' own
// meta.json) and, carried over, other programs' files. One atomic exchange
// publishes it. Growing past the saved rows leaves what the old meta.json
// files describe untouched, so the old tree stays whole until the exchange: a
// reader sees the old rows or the new ones, never a meta.json that disagrees
// with its files or with another level's, and a writer killed before the
// exchange leaves the old tree (its data files longer than it says, which
// loads as before: the next append writes over the extra bytes).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <algorithm>
#include <utility>

#include "core/kind_ops.h"
#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/detail/test_hooks.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"
#include "tensordict/print_options.h"
#include "tensordict/remove_tree.h"
#include "tensordict/detail/tensorclass_support.h"  // torch_size, tensor_repr

namespace tensordict {

namespace detail::memmap {

namespace {

// A data file that grows: `rel` is its path in the tree, `saved_bytes` what
// the saved rows take of it (0: the saved leaf has no elements, hence no file).
// `file`, held open from the check (while the tree was read) to the write: a
// name flipped meanwhile to another file (a hard link to a file outside the
// tree) never receives the rows.
struct GrownLeaf {
  fs::path rel;
  std::size_t saved_bytes;
  at::Tensor rows;  // CPU, contiguous
  std::shared_ptr<UniqueFd> file;  // open read/write when saved_bytes > 0
  struct ::stat st {};
};

at::IntArrayRef beyond_first(at::IntArrayRef sizes) { return sizes.empty() ? sizes : sizes.slice(1); }

// Python's repr of a shape tuple: (2, 3), (2,), ().
std::string shape_tuple(at::IntArrayRef sizes) {
  return sizes.size() == 1 ? fmt::format("({},)", sizes[0]) : fmt::format("({})", fmt::join(sizes, ", "));
}

std::string dtype_text(at::ScalarType dtype) { return "torch." + std::string(dtype_name(dtype)); }

// The class of a level of the rows, as the `_type` a tensorclass level is
// saved with: a tensorclass loaded without a registered loader (and a
// generated tensorclass, see append_memmap_tensorclass) holds it in its
// kLoadedClassKey entry; nullopt for a tensordict.
std::optional<std::string> rows_class(const TensorDict& rows) {
  const auto value = rows.get_value(std::string(kLoadedClassKey));
  if (!value || !value->is_non_tensor() || value->non_tensor().is_stack()) return std::nullopt;
  const Json data = value->non_tensor().data();
  if (!data.is_string()) return std::nullopt;
  return data.get<std::string>();
}

// type(value).__name__ of an entry of the rows.
std::string row_type_name(const Value& value) {
  if (value.is_tensor()) return "Tensor";
  if (value.is_non_tensor()) return value.non_tensor().is_stack() ? "NonTensorStack" : "NonTensorData";
  const auto cls = rows_class(value.tensordict());
  return cls ? bare_class_name(*cls) : std::string(value.tensordict().type_name());
}

// The value a row holds where the saved tensordict has a non-tensor value.
std::string value_repr(const Value& value) {
  if (value.is_tensor()) return detail::tensor_repr(value.tensor(), get_printoptions());
  if (value.is_tensordict()) return std::string(value.tensordict().type_name());
  const NonTensorData& data = value.non_tensor();
  return data.is_stack() ? fmt::format("NonTensorStack({})", tensordict::python_repr(data.data()))
                         : tensordict::python_repr(data.data());
}

// Whether every element of `data` holds `value` (tensordict compares each
// value of a NonTensorStack).
bool holds_only(const NonTensorData& data, const Json& value) {
  if (!data.is_stack()) return data.data() == value;
  const at::Tensor ids = data.ids().reshape({-1}).contiguous().cpu();
  const int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if ((*data.pool())[static_cast<std::size_t>(id[i])] != value) return false;
  }
  return true;
}

// Everything an append writes, found by walking the loaded tree beside the rows.
class Planner {
 public:
  explicit Planner(const fs::path& top) : top_(top) {}

  // tensordict's _check_append for the level at `rel` (its directory in the
  // tree), loaded as `saved`.
  void level(const fs::path& rel, const TensorDict& saved, const TensorDict& rows, std::vector<std::string>& path) {
    const std::string where = path.empty() ? "the saved tensordict" : "the entry " + NestedKey(path).repr();
    if (beyond_first(rows.batch_size()) != beyond_first(saved.batch_size())) {
      throw ValueError(fmt::format(
          "Cannot append rows of batch size {} to {}, of batch size {}: they differ beyond the first dimension.",
          torch_size(rows.batch_size()), where, torch_size(saved.batch_size())));
    }
    const Json meta = read_meta(top_ / rel);
    const std::string type = meta["_type"].get<std::string>();
    const auto row_type = rows_class(rows);
    const std::string rows_name = row_type ? bare_class_name(*row_type) : std::string(rows.type_name());
    const bool is_class = !type_is(type, "TensorDict") && !type_is(type, "LazyStackedTensorDict");
    fs::path data_rel = rel;
    dirs_.push_back(rel);
    if (is_class) {
      // The class as loading checks it (check_memmap_class): its _type, or the
      // same class name written by a Python module elsewhere.
      if (!row_type || (*row_type != type && bare_class_name(*row_type) != bare_class_name(type))) {
        throw ValueError(fmt::format("Cannot append a {} to {}, a {}.", rows_name, where, bare_class_name(type)));
      }
      kept_.push_back(rel / "meta.json");  // _type and non-tensor fields: unchanged
      data_rel = rel / "_tensordict";
      dirs_.push_back(data_rel);
    } else if (!type_is(type, "TensorDict") || row_type) {
      throw ValueError(fmt::format("Cannot append a {} to {}, a {}.", rows_name, where, bare_class_name(type)));
    }
    std::vector<std::string> saved_keys = saved.sorted_keys();
    std::vector<std::string> rows_keys = rows.sorted_keys();
    // The class name a loaded tensorclass carries is no field.
    const auto drop_class_key = [](std::vector<std::string>& keys) {
      keys.erase(std::remove(keys.begin(), keys.end(), kLoadedClassKey), keys.end());
    };
    if (is_class) drop_class_key(saved_keys);
    if (row_type) drop_class_key(rows_keys);
    if (saved_keys != rows_keys) {
      throw ValueError(fmt::format("Cannot append rows with the keys {} to {}, which has the keys {}.",
                                   detail::python_repr(rows_keys), where, detail::python_repr(saved_keys)));
    }
    const fs::path data_dir = top_ / data_rel;
    const Json data_meta = is_class ? read_meta(data_dir) : meta;
    metas_.emplace_back(data_rel, data_meta);
    for (const auto& key : saved.keys()) {
      const std::string& name = key.path().front();
      if (is_class && name == kLoadedClassKey) continue;
      path.push_back(name);
      entry(data_dir, data_meta, name, *saved.get_value(name), *rows.get_value(name), path);
      path.pop_back();
    }
  }

  const std::vector<fs::path>& dirs() const { return dirs_; }
  std::vector<std::pair<fs::path, Json>>& metas() { return metas_; }
  const std::vector<fs::path>& kept() const { return kept_; }
  const std::vector<GrownLeaf>& leaves() const { return leaves_; }

 private:
  fs::path relative(const fs::path& path) const { return path.lexically_relative(top_); }

  void entry(const fs::path& dir, const Json& meta, const std::string& name, const Value& old, const Value& now,
             std::vector<std::string>& path) {
    const std::string where = "the entry " + NestedKey(path).repr();
    if (old.is_non_tensor()) {
      const NonTensorData& saved = old.non_tensor();
      if (saved.is_stack()) {
        throw ValueError(fmt::format(
            "Cannot append to {}, a NonTensorStack: a stack of non-tensor values cannot grow.", where));
      }
      if (!now.is_non_tensor() || !holds_only(now.non_tensor(), saved.data())) {
        throw ValueError(fmt::format(
            "Cannot append to {}: the saved non-tensor value {} stays as it is, so the rows must hold the same "
            "value, not {}.",
            where, tensordict::python_repr(saved.data()), value_repr(now)));
      }
      // Its own directory, kept; a tensorclass's non-tensor field may instead
      // live in the class's meta.json (kept with it).
      if (meta.contains(name) && meta[name].is_object() && meta[name].contains("type")) {
        const fs::path sub = relative(entry_dir(dir, name));
        dirs_.push_back(sub);
        kept_.push_back(sub / "meta.json");
      }
    } else if (old.is_tensordict()) {
      const fs::path sub = entry_dir(dir, name);
      if (detail::as_stacked(*old.tensordict().impl())) {
        throw ValueError(fmt::format("Cannot append to {}: a lazy stack cannot grow.", where));
      }
      if (!now.is_tensordict()) {
        const std::string saved_type = read_meta(sub)["_type"].get<std::string>();
        throw ValueError(
            fmt::format("Cannot append a {} to {}, a {}.", row_type_name(now), where, bare_class_name(saved_type)));
      }
      level(relative(sub), old.tensordict(), now.tensordict(), path);
    } else {
      if (!now.is_tensor()) {
        throw ValueError(fmt::format("Cannot append a {} to {}, a tensor.", row_type_name(now), where));
      }
      const at::Tensor& saved = old.tensor();
      const at::Tensor& rows = now.tensor();
      if (saved.is_nested() || rows.is_nested()) {
        throw ValueError(fmt::format("Cannot append to {}: a nested tensor cannot grow.", where));
      }
      if (rows.scalar_type() != saved.scalar_type() || beyond_first(rows.sizes()) != beyond_first(saved.sizes())) {
        throw ValueError(fmt::format("Cannot append rows of dtype {} and shape {} to {}, of dtype {} and shape {}.",
                                     dtype_text(rows.scalar_type()), shape_tuple(rows.sizes()), where,
                                     dtype_text(saved.scalar_type()), shape_tuple(saved.sizes())));
      }
      GrownLeaf leaf{relative(leaf_file(dir, name)), static_cast<std::size_t>(saved.numel()) * saved.element_size(),
                     rows.detach().cpu().resolve_conj().resolve_neg().contiguous(), nullptr};
      if (leaf.saved_bytes > 0) {
        // Opened and checked as loading checks it, through the tree's descriptor.
        const fs::path file = leaf_file(dir, name);
        leaf.file = std::make_shared<UniqueFd>(
            open_tree_file(file, O_RDWR, &leaf.st, fmt::format("the data file of key '{}'", name)));
        if (leaf.file->get() < 0) {
          throw RuntimeError(
              fmt::format("cannot open {} to append to it: {}", file.string(), std::strerror(errno)));
        }
        refuse_linked_leaf(leaf.file->get(), leaf.st, file, name);
      }
      leaves_.push_back(std::move(leaf));
    }
  }

  fs::path top_;
  std::vector<fs::path> dirs_;                     // level directories, parents first
  std::vector<std::pair<fs::path, Json>> metas_;  // tensordict levels: their meta.json, rewritten
  std::vector<fs::path> kept_;                     // files the new tree keeps as they are
  std::vector<GrownLeaf> leaves_;
};

// tensordict's rewrite of a level's meta.json: the level's first batch size
// and the first size of each of its leaves become `rows`; the rest is kept.
void set_rows(Json& meta, int64_t rows) {
  meta["shape"][0] = rows;
  for (auto& [key, entry] : meta.items()) {
    if (entry.is_object() && entry.contains("dtype") && entry.contains("shape") && entry["shape"].is_array() &&
        !entry["shape"].empty()) {
      entry["shape"][0] = rows;
    }
  }
}

// Copies the open file `in` to the new file `staged` of the staging tree;
// false with errno set on failure.
bool copy_to(int in, const fs::path& staged, const StagingDir& staging) {
  struct stat st {};
  if (::fstat(in, &st) != 0) return false;
  UniqueFd out(::openat(staging.fd(), staging.rel(staged).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        st.st_mode & 07777));
  return out.get() >= 0 && copy_contents(in, out.get());
}

// `staged` (a new name in the staging tree) becomes the file `file` of the tree:
// a hard link, else (a file system without them) a copy.
void keep_file(const fs::path& file, const fs::path& staged, const StagingDir& staging) {
  if (link_file(file, staged, staging)) return;
  UniqueFd in(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (in.get() < 0 || !copy_to(in.get(), staged, staging)) {
    throw RuntimeError(fmt::format("cannot append to the tensordict: cannot keep {} in the new tree ({})", file.string(),
                                   std::strerror(errno)));
  }
}

// The staged name of the grown leaf `leaf` (its file `file` in the tree):
// returns the open file the rows go to. A hard link to the very file checked
// (the same inode as the descriptor held; the name may meanwhile be another
// file: refused), else a copy of it.
UniqueFd stage_leaf(const GrownLeaf& leaf, const fs::path& file, const fs::path& staged, const StagingDir& staging) {
  if (link_file(file, staged, staging)) {
    struct stat named {};
    if (::fstatat(staging.fd(), staging.rel(staged).c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 ||
        named.st_dev != leaf.st.st_dev || named.st_ino != leaf.st.st_ino) {
      throw RuntimeError(fmt::format("cannot append to the tensordict: its data file {} was replaced by another file "
                                     "during the append; nothing was written",
                                     file.string()));
    }
    return UniqueFd(::dup(leaf.file->get()));
  }
  if (!copy_to(leaf.file->get(), staged, staging)) {
    throw RuntimeError(fmt::format("cannot append to the tensordict: cannot keep {} in the new tree ({})", file.string(),
                                   std::strerror(errno)));
  }
  return UniqueFd(::openat(staging.fd(), staging.rel(staged).c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

void append_tree(const std::string& prefix, const TensorDict& rows, const MemmapOptions& options) {
  std::error_code ec;
  if (prefix.empty() || !fs::is_directory(fs::symlink_status(prefix, ec))) {
    throw ValueError(fmt::format(
        "append_memmap appends to a directory written by save or memmap, and {} is not one.", prefix));
  }
  const fs::path target = target_dir(prefix);
  refuse_working_directory(target);
  PrefixLock lock(target, options.lock_timeout);
  remove_stale_staging(target);

  Planner planner(target);
  int64_t num_rows = 0;
  read_tree(target, [&] {
    planner = Planner(target);
    const TensorDict saved = load_level(target, std::nullopt);
    if (saved.batch_dims() == 0 || rows.batch_dims() == 0) {
      throw ValueError(fmt::format(
          "append_memmap appends along the first batch dimension, which the saved tensordict (batch size {}) and "
          "the rows (batch size {}) must both have.",
          torch_size(saved.batch_size()), torch_size(rows.batch_size())));
    }
    std::vector<std::string> path;
    planner.level(fs::path(), saved, rows, path);
    num_rows = saved.batch_size()[0] + rows.batch_size()[0];
  });

  test_hook("append: checked");
  StagingDir staging(target);
  // Files of the tree grown in place (through the descriptor held since the
  // check), with their sizes before: a failed append gives them back.
  std::vector<std::pair<UniqueFd, std::size_t>> grown;
  try {
    for (const auto& dir : planner.dirs()) make_dir(staging, staging.path() / dir);
    for (auto& [dir, meta] : planner.metas()) {
      set_rows(meta, num_rows);
      write_file_atomic(staging.path() / dir / "meta.json", dump_meta(meta, target / dir / "meta.json", "the level"),
                        options.sync, &staging);
    }
    for (const auto& file : planner.kept()) keep_file(target / file, staging.path() / file, staging);
    for (const GrownLeaf& leaf : planner.leaves()) {
      const fs::path staged = staging.path() / leaf.rel;
      const std::size_t bytes = leaf.rows.nbytes();
      if (leaf.saved_bytes == 0) {
        // tensordict writes no file for a leaf without elements.
        if (bytes > 0) write_data_file(staged, leaf.rows, bytes, options.sync, &staging);
        continue;
      }
      UniqueFd out = stage_leaf(leaf, target / leaf.rel, staged, staging);
      struct stat st {};
      if (out.get() < 0 || ::fstat(out.get(), &st) != 0) {
        throw RuntimeError(fmt::format("cannot open {} to append to it: {}", staged.string(), std::strerror(errno)));
      }
      if (bytes == 0) continue;
      const int fd = out.get();
      grown.emplace_back(std::move(out), static_cast<std::size_t>(st.st_size));
      grow_data_file(fd, staged, leaf.saved_bytes, leaf.rows, bytes, options.sync);
    }
    carry_over(target, staging);
    publish_dir(staging, target, options.sync);
  } catch (...) {
    for (const auto& [file, size] : grown) (void)::ftruncate(file.get(), static_cast<off_t>(size));
    remove_tree(staging.path(), ec);
    throw;
  }
}

}  // namespace detail::memmap

void append_memmap(const std::string& prefix, const TensorDict& rows, const MemmapOptions& options) {
  detail::memmap::append_tree(prefix, rows, options);
}

void append_memmap_tensorclass(const std::string& prefix, const TensorDict& rows, const MemmapClassTags& tags,
                               const MemmapOptions& options) {
  // The rows as a tensorclass loads dynamically: each class level holds its
  // non-tensor fields and its class name (kLoadedClassKey), which is what the
  // planner compares with the saved tree.
  TensorDict form = rows.clone({.recurse = false});
  for (const auto& [path, tag] : tags) {
    TensorDict level = path.empty() ? form : form.get_td(NestedKey(path));
    for (const auto& [key, value] : tag.fields.items()) {
      if (!value.is_null()) level.set_non_tensor(key, value);
    }
    level.set_non_tensor(std::string(kLoadedClassKey), tag.type);
  }
  append_memmap(prefix, form, options);
}

}  // namespace tensordict
