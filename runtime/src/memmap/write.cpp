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

#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "../dense_impl.h"
#include "../format.h"
#include "../lazy_impl.h"
#include "../map_leaves.h"
#include "memmap_detail.h"
#include "tensordict/dense.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace detail::memmap {

// ---- memmap state ---------------------------------------------------------------

namespace {

struct MemmapState {
  std::weak_ptr<TensorDictImpl> impl;
  fs::path dir;
};

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<const TensorDictImpl*, MemmapState>& states() {
  static std::unordered_map<const TensorDictImpl*, MemmapState> s;
  return s;
}

std::optional<fs::path> state_of(const TensorDictImpl* impl) {
  std::lock_guard lock(state_mutex());
  auto it = states().find(impl);
  if (it == states().end()) return std::nullopt;
  auto alive = it->second.impl.lock();
  if (alive.get() != impl) return std::nullopt;  // a new object at a recycled address
  return it->second.dir;
}

}  // namespace

void mark_memmapped(const std::shared_ptr<TensorDictImpl>& impl, const fs::path& dir) {
  std::lock_guard lock(state_mutex());
  auto& s = states();
  if (s.size() > 64) std::erase_if(s, [](const auto& kv) { return kv.second.impl.expired(); });
  s[impl.get()] = MemmapState{impl, fs::absolute(dir)};
}

// ---- writer -----------------------------------------------------------------------

namespace {

struct Job {
  fs::path file;
  at::Tensor source;
  at::Tensor result;
  NestedKey key;
  std::exception_ptr error;
};

struct Level;

struct Entry {
  std::string key;
  Value value;                   // the source value (non-tensor data: also the result)
  std::size_t job = SIZE_MAX;    // tensor leaf written by a job
  at::Tensor kept;               // tensor leaf already mapped at its file
  std::unique_ptr<Level> child;  // nested tensordict
};

struct Level {
  fs::path dir;  // where this level's meta.json goes (<class dir>/_tensordict for a tensorclass)
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
  std::string name = level.tag->type;
  if (name.starts_with("<class '") && name.ends_with("'>")) name = name.substr(8, name.size() - 10);
  if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  return name;
}

bool is_reserved(const std::string& key) { return key == "shape" || key == "device" || key == "_type"; }

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

class Writer {
 public:
  Writer(Mode mode, const MemmapOptions& options, const MemmapClassTags* tags)
      : mode_(mode), options_(options), tags_(tags) {}

  std::unique_ptr<Level> plan(const std::shared_ptr<TensorDictImpl>& impl, const fs::path& class_or_dir,
                              std::vector<std::string>& path) {
    auto level = std::make_unique<Level>();
    level->source = impl;
    fs::path dir = class_or_dir;
    if (tags_) {
      if (auto it = tags_->find(path); it != tags_->end()) {
        level->tag = &it->second;
        level->class_dir = class_or_dir;
        make_dir(class_or_dir);
        dir = class_or_dir / "_tensordict";
      }
    }
    level->dir = dir;
    if (auto* lazy = dynamic_cast<LazyStackedImpl*>(impl.get())) {
      // Each member is a full collection of its own (keys and shapes may differ).
      make_dir(dir);
      level->stack_dim = lazy->stack_dim();
      const auto& members = lazy->members();
      for (std::size_t i = 0; i < members.size(); ++i) {
        path.push_back(std::to_string(i));
        level->members.push_back(plan(members[i].impl(), dir / std::to_string(i), path));
        path.pop_back();
      }
      return level;
    }
    if (mode_ == Mode::InPlace && !dynamic_cast<DenseImpl*>(impl.get())) {
      throw std::invalid_argument(
          fmt::format("memmap_ works in place on dense TensorDicts only (and lazy stacks of them); {} is a {}: "
                      "use memmap()",
                      path.empty() ? std::string("the tensordict") : NestedKey(path).repr(), impl->type_name()));
    }
    make_dir(dir);
    impl->for_each([&](const std::string& key, const Value& value) {
      path.push_back(key);
      const NestedKey nested(path);
      if (is_reserved(key)) {
        throw std::invalid_argument(fmt::format(
            "cannot memmap key {} to {}: '{}' is reserved in meta.json (shape, device and _type describe the level); "
            "rename the key",
            nested.repr(), dir.string(), key));
      }
      Entry entry{key, value, SIZE_MAX, {}, nullptr};
      const std::string name = encode_key(key);
      if (value.is_tensor()) {
        plan_leaf(entry, value.tensor(), dir / (name + ".memmap"), nested);
      } else if (value.is_non_tensor()) {
        const fs::path sub = dir / name;
        make_dir(sub);
        write_file_atomic(sub / "meta.json", dump_meta(non_tensor_meta(value.non_tensor())));
      } else {
        entry.child = plan(value.impl(), dir / name, path);
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
        job.result = map_new(job.file, job.source.scalar_type(), job.source.sizes(), options_.existsok);
        if (mode_ != Mode::Like && job.result.numel() > 0) job.result.copy_(job.source);
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

  // Builds (or, in place, updates) the tensordict of `level` and writes its
  // meta.json (and, for a tensorclass, the class's meta.json above it).
  std::shared_ptr<TensorDictImpl> finish(Level& level) {
    auto out = level.stack_dim ? finish_lazy(level) : finish_dense(level);
    if (level.tag) {
      Json meta = Json::object();
      meta["_type"] = level.tag->type;
      for (const auto& [key, value] : level.tag->fields.items()) meta[key] = value;
      write_file_atomic(level.class_dir / "meta.json", dump_meta(meta));
    }
    return out;
  }

 private:
  std::shared_ptr<TensorDictImpl> finish_lazy(Level& level) {
    std::vector<TensorDictBase> members;
    for (auto& member : level.members) members.emplace_back(finish(*member));
    // In place the members were updated in place: the stack already holds them.
    std::shared_ptr<TensorDictImpl> out =
        mode_ == Mode::InPlace ? level.source : std::make_shared<LazyStackedImpl>(std::move(members), *level.stack_dim);
    Json meta = Json::object();
    meta["_type"] = kLazyStackType;
    meta["stack_dim"] = *level.stack_dim;
    write_file_atomic(level.dir / "meta.json", dump_meta(meta));
    mark_memmapped(out, level.dir);
    return out;
  }

  std::shared_ptr<TensorDictImpl> finish_dense(Level& level) {
    const TensorDictImpl& src = *level.source;
    std::shared_ptr<TensorDictImpl> out =
        mode_ == Mode::InPlace ? level.source
                               : std::make_shared<DenseImpl>(src.batch_size().vec(), at::Device(at::kCPU), src.names());
    Json meta = Json::object();
    for (Entry& entry : level.entries) {
      if (entry.child) {
        auto child = finish(*entry.child);
        meta[entry.key] = {{"type", entry_type(*entry.child)}};
        if (mode_ != Mode::InPlace) out->insert(entry.key, Value(TensorDictBase(child)));
      } else if (entry.value.is_non_tensor()) {
        meta[entry.key] = {{"type", entry.value.non_tensor().is_stack() ? "NonTensorStack" : "NonTensorData"}};
        if (mode_ != Mode::InPlace) out->insert(entry.key, entry.value);
      } else {
        at::Tensor t = entry.job != SIZE_MAX ? jobs_[entry.job].result : entry.kept;
        meta[entry.key] = leaf_entry(t);
        out->insert(entry.key, Value(std::move(t)));
      }
    }
    meta["shape"] = src.batch_size().vec();
    meta["device"] = "cpu";
    meta["_type"] = kTensorDictType;
    if (mode_ == Mode::InPlace) out->set_meta(src.batch_size().vec(), at::Device(at::kCPU), src.names());
    write_file_atomic(level.dir / "meta.json", dump_meta(meta));
    mark_memmapped(out, level.dir);
    return out;
  }

  void plan_leaf(Entry& entry, const at::Tensor& tensor, const fs::path& file, const NestedKey& key) {
    if (mode_ != Mode::Like) {
      if (auto existing = mapped_path(tensor)) {
        if (*existing == fs::absolute(file)) {
          // Already memory-mapped at its place: nothing to write.
          entry.kept = tensor;
          return;
        }
        if (!options_.copy_existing) {
          throw std::runtime_error(
              fmt::format("key {} is already memory-mapped to {}, not to {}; pass copy_existing=true to copy it there",
                          key.repr(), existing->string(), file.string()));
        }
      }
    }
    entry.job = jobs_.size();
    jobs_.push_back(Job{file, tensor.detach(), {}, key, nullptr});
  }

  Mode mode_;
  MemmapOptions options_;
  const MemmapClassTags* tags_;
  std::vector<Job> jobs_;
};

}  // namespace

std::shared_ptr<TensorDictImpl> write_tree(const std::shared_ptr<TensorDictImpl>& impl, const std::string& prefix,
                                           Mode mode, const MemmapOptions& options, const MemmapClassTags* tags) {
  if (prefix.empty()) throw std::invalid_argument("memmap needs a directory prefix, got an empty path");
  Writer writer(mode, options, tags);
  std::vector<std::string> path;
  auto root = writer.plan(impl, fs::path(prefix), path);
  writer.run_jobs();
  auto out = writer.finish(*root);
  // tensordict locks a memory-mapped tensordict (every level).
  TensorDictBase(out).lock_();
  return out;
}

}  // namespace detail::memmap

using namespace detail::memmap;

TensorDictBase& TensorDictBase::memmap_(const std::string& prefix, const MemmapOptions& options) {
  write_tree(impl_, prefix, Mode::InPlace, options);
  return *this;
}

namespace {
// memmap() and memmap_like() return a TensorDict; a lazy stack's copy is a
// lazy stack, which LazyStackedTensorDict's own methods return.
void refuse_lazy_root(const TensorDictImpl& impl, std::string_view method) {
  if (dynamic_cast<const detail::LazyStackedImpl*>(&impl)) {
    throw std::invalid_argument(fmt::format(
        "{}() of a LazyStackedTensorDict gives a LazyStackedTensorDict, not a TensorDict: call "
        "LazyStackedTensorDict(td).{}(prefix)",
        method, method));
  }
}
}  // namespace

TensorDict TensorDictBase::memmap(const std::string& prefix, const MemmapOptions& options) const {
  refuse_lazy_root(*impl_, "memmap");
  return TensorDict(TensorDictBase(write_tree(impl_, prefix, Mode::Copy, options)));
}

TensorDict TensorDictBase::memmap_like(const std::string& prefix, const MemmapOptions& options) const {
  refuse_lazy_root(*impl_, "memmap_like");
  return TensorDict(TensorDictBase(write_tree(impl_, prefix, Mode::Like, options)));
}

LazyStackedTensorDict LazyStackedTensorDict::memmap(const std::string& prefix, const MemmapOptions& options) const {
  return LazyStackedTensorDict(TensorDictBase(write_tree(impl_, prefix, Mode::Copy, options)));
}

LazyStackedTensorDict LazyStackedTensorDict::memmap_like(const std::string& prefix,
                                                         const MemmapOptions& options) const {
  return LazyStackedTensorDict(TensorDictBase(write_tree(impl_, prefix, Mode::Like, options)));
}

TensorDict memmap_tensorclass(const TensorDictBase& td, const std::string& prefix, const MemmapClassTags& tags,
                              const MemmapOptions& options) {
  refuse_lazy_root(*td.impl(), "memmap");
  return TensorDict(TensorDictBase(write_tree(td.impl(), prefix, Mode::Copy, options, &tags)));
}

TensorDict TensorDictBase::save(const std::string& prefix, const MemmapOptions& options) const {
  return memmap(prefix, options);
}

bool TensorDictBase::is_memmap() const { return state_of(impl_.get()).has_value(); }

std::optional<std::string> TensorDictBase::saved_path() const {
  auto dir = state_of(impl_.get());
  if (!dir) return std::nullopt;
  return dir->string();
}

}  // namespace tensordict
