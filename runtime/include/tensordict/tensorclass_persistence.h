// tensordict::TensorClassPersistence<Derived>: a tensorclass on disk, in
// Python tensordict's formats (FORMATS.md): memmap directories in
// tensordict's tensorclass layout, h5 files, save/load, and where an
// instance was saved.
//
// A base of TensorClass<Derived> (tensorclass.h). One writer with
// TensorDict's: memmap() writes the tensordict form plus tags saying which
// levels are tensorclasses; loading reads a tensordict form and builds the
// typed instance from it (validated like construction).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/memmap.h"
#include "tensordict/persistent.h"
#include "tensordict/schema.h"
#include "tensordict/tensorclass_fields.h"
#include "tensordict/tensorclass_support.h"

namespace tensordict {

namespace detail {
// Non-template helpers of the methods below (src/typed/tensorclass_persistence.cpp).

// Checks that meta.json `meta` of `dir` names the class `info` (its
// python_type, or the same bare class name as a Python module elsewhere
// writes it); throws RuntimeError naming the file and both classes.
void check_memmap_class(const Json& meta, const schema::ClassInfo& info, const std::string& dir);

// h5 stores no batch size: the number of batch dims of a `info` level comes
// from a tensor field with a declared shape (its dims minus the declared
// feature dims) or the class's declared batch names; without either, the
// parent's batch size (`parent`, when nested) or the batch size `td` was read with.
std::vector<int64_t> infer_batch_size(const schema::ClassInfo& info, const TensorDict& td,
                                      std::optional<at::IntArrayRef> parent);

// TypeError "Class.name: non-tensor field must be a string, got 3" (an int
// field: "an int in int64's range").
[[noreturn]] void throw_bad_non_tensor(const std::string& path, const schema::FieldInfo& field, const Json& got);

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// Whether `json` converts to the field type M keeping its value: nlohmann's
// get<int64_t>() casts 1e30 to INT64_MIN, 2^64-1 to -1 and 5.5 to 5 silently.
template <class M>
bool json_fits(const Json& json) {
  if constexpr (std::is_same_v<M, bool>) {
    return json.is_boolean();
  } else if constexpr (std::is_integral_v<M>) {
    if (json.is_number_unsigned()) {
      return json.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<M>::max());
    }
    if (!json.is_number_integer()) return false;
    const auto value = json.get<std::int64_t>();
    if (value < 0) return std::is_signed_v<M> && value >= static_cast<std::int64_t>(std::numeric_limits<M>::min());
    return static_cast<std::uint64_t>(value) <= static_cast<std::uint64_t>(std::numeric_limits<M>::max());
  } else if constexpr (std::is_floating_point_v<M>) {
    return json.is_number();
  } else if constexpr (std::is_same_v<M, std::string>) {
    return json.is_string();
  } else if constexpr (IsVector<M>::value) {
    if (!json.is_array()) return false;
    for (const auto& element : json) {
      if (!json_fits<typename M::value_type>(element)) return false;
    }
    return true;
  } else {
    return true;  // nlohmann's own checks
  }
}

}  // namespace detail

template <class Derived>
class TensorClass;
template <class Derived>
class TensorClassPersistence;

// tensordict.append_memmap(prefix, rows) with a tensorclass's rows: the tree
// its memmap() (or Python's, of the same class) wrote at `prefix` grows by
// them; every level's class must be the saved one, and its non-tensor fields
// equal the saved values. See append_memmap in memmap.h.
template <class Derived>
void append_memmap(const std::string& prefix, const TensorClassPersistence<Derived>& rows,
                   const MemmapOptions& options = {});

template <class Derived>
class TensorClassPersistence {
 public:
  // Writes a memory-mapped copy at `prefix`: meta.json = {"_type": <python_type>,
  // <non-tensor fields>...} (unset optional tensors as null, as Python keeps
  // None fields there), tensor fields in `prefix/_tensordict/`, each nested
  // tensorclass in its own directory there with its own meta.json. Returns the
  // copy, holding the mapped tensors, locked. One writer with TensorDict's:
  // the tensordict form plus tags saying which levels are tensorclasses.
  Derived memmap(const std::string& prefix, const MemmapOptions& options = {}) const {
    return written_(prefix, options, MemmapContent::Copy);
  }
  // tensordict's memmap_like: the same layout with zero-filled tensors of the
  // fields' shapes and dtypes (nothing is copied), non-tensor fields kept.
  Derived memmap_like(const std::string& prefix, const MemmapOptions& options = {}) const {
    return written_(prefix, options, MemmapContent::Like);
  }
  // memmap() in place: the tensor members become the mapped ones. A shared
  // instance (share_memory_) is refused: memmap and shared memory exclude
  // each other (tensordict's rule).
  Derived& memmap_(const std::string& prefix, const MemmapOptions& options = {}) {
    if (tc_().tc_shared_) throw RuntimeError("memmap_: memmap and shared memory are mutually exclusive features.");
    self_() = memmap(prefix, options);
    return self_();
  }
  // Loads what memmap() (or Python tensordict) wrote at `prefix`: tensors are
  // memory-mapped, non-tensor fields come from meta.json (schema defaults when
  // absent). Validated like construction; errors also name the directory.
  static Derived load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt) {
    register_memmap();
    Derived out;
    bool mapped = false;
    read_memmap_tree(prefix, [&] {
      const Json meta = read_memmap_meta(prefix);
      detail::check_memmap_class(meta, TensorClass<Derived>::schema(), prefix);
      const TensorDict td = load_tensorclass_level(prefix, meta, device);
      mapped = td.is_memmap();
      out = from_loaded_(td, prefix, false);
    });
    // A .tdz archive's instance is not memory-mapped, as in tensordict.
    if (mapped) detail::tc(out).saved_path_ = prefix;
    return out;
  }
  // Lets tensordict::load_memmap / TensorDict::load_memmap read directories of
  // this class (and of its nested tensorclasses) as TensorDicts holding the
  // tensor fields and the non-tensor ones as NonTensorData. load_memmap calls it.
  static void register_memmap() {
    static const bool registered = [] {
      MemmapLoader loader = [](const std::string& dir, const Json& meta, std::optional<at::Device> device) {
        return Value(load_tensorclass_level(dir, meta, device));
      };
      register_memmap_class(std::string(TensorClass<Derived>::schema().python_type), loader);
      register_memmap_class(std::string(TensorClass<Derived>::schema().name), loader);
      TensorClass<Derived>::visit_fields_([](detail::NestedField, auto field) { register_nested_memmap_(field); });
      return true;
    }();
    (void)registered;
  }
  // Writes the tensordict form to a new h5 file: tensor fields as datasets,
  // string fields as tensordict's string datasets. h5 stores no other
  // non-tensor data: such a field holding its schema default is left out (on
  // load it takes the default again); any other value is refused, naming the
  // field, rather than lost (memmap() stores every field).
  PersistentTensorDict to_h5(const std::string& path, const H5Options& options = {}) const {
    return tc_().tensordict_form_(detail::NonTensorFields::H5).to_h5(path, options);
  }
  // tensordict's save / load: memmap() and load_memmap().
  Derived save(const std::string& prefix, const MemmapOptions& options = {}) const { return memmap(prefix, options); }
  static Derived load(const std::string& prefix, std::optional<at::Device> device = std::nullopt) {
    return load_memmap(prefix, device);
  }
  // True for an instance memmap()/memmap_() wrote or load_memmap() loaded
  // (not for what ops derive from it, as for a TensorDict).
  bool is_memmap() const { return saved_path_.has_value(); }
  // The directory it was written to or loaded from.
  const std::optional<std::string>& saved_path() const { return saved_path_; }
  // Reads an h5 file written by to_h5 (or h5py): the batch size comes from the
  // schema's declared shapes, non-tensor fields take their defaults. Validated.
  static Derived from_h5(const std::string& path) {
    const TensorDict td = PersistentTensorDict::from_h5(path, "r").to_tensordict();
    return from_loaded_(td, path, true);
  }

 protected:
  TensorClassPersistence() = default;

 private:
  friend class TensorClass<Derived>;
  template <class>
  friend class TensorClassPersistence;
  template <class D>
  friend void append_memmap(const std::string& prefix, const TensorClassPersistence<D>& rows,
                            const MemmapOptions& options);

  // As in TensorClassSurface: members are reached through tc_(), never
  // through Derived, where a field may hide them.
  Derived& self_() { return static_cast<Derived&>(*this); }
  const Derived& self_() const { return static_cast<const Derived&>(*this); }
  TensorClass<Derived>& tc_() { return detail::tc(self_()); }
  const TensorClass<Derived>& tc_() const { return detail::tc(self_()); }

  template <class F>
  static void register_nested_memmap_(F) {
    TensorClass<nested_class_t<typename F::member_type>>::register_memmap();
  }

  // memmap() or memmap_like(): the tensordict form plus tags saying which
  // levels are tensorclasses.
  Derived written_(const std::string& prefix, const MemmapOptions& options, MemmapContent content) const {
    register_memmap();  // an archive is loaded back after it is written
    MemmapClassTags tags;
    collect_tags_(tags, {});
    const TensorDict mapped =
        memmap_tensorclass(tc_().tensordict_form_(detail::NonTensorFields::Stacks), prefix, tags, options, content);
    Derived out = tc_().shell_();
    detail::tc(out).set_locked_tree_(false);
    detail::tc(out).from_td_(mapped);
    // A .tdz archive loads as tensordict's does: neither memory-mapped nor locked.
    if (mapped.is_memmap()) {
      detail::tc(out).set_locked_tree_(true);
      detail::tc(out).saved_path_ = prefix;
    }
    return out;
  }

  // The tags that make memmap_tensorclass write this level (at `path`) and
  // every nested tensorclass in tensorclass layout.
  void collect_tags_(MemmapClassTags& tags, std::vector<std::string> path) const {
    MemmapClassTag tag{std::string(TensorClass<Derived>::schema().python_type), Json::object()};
    TensorClass<Derived>::visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                                                if (!m.defined()) tag.fields[std::string(field.info().name)] = nullptr;
                                              },
                                              [&](detail::NestedField, auto field, const auto& m) {
                                                const std::string name(field.info().name);
                                                const auto* n = detail::present(m);
                                                if (!n) {
                                                  tag.fields[name] = nullptr;  // Python's tensorclass stores None
                                                  return;
                                                }
                                                auto sub = path;
                                                sub.push_back(name);
                                                detail::tc(*n).collect_tags_(tags, std::move(sub));
                                              },
                                              [&](detail::DataField, auto field, const auto& m) {
                                                tag.fields[std::string(field.info().name)] = m;
                                              }},
                           self_());
    tags.emplace(std::move(path), std::move(tag));
  }

  // append_memmap with this instance as the rows: its tensordict form plus
  // the tags of its tensorclass levels, as memmap() writes them.
  void append_to_(const std::string& prefix, const MemmapOptions& options) const {
    MemmapClassTags tags;
    collect_tags_(tags, {});
    append_memmap_tensorclass(prefix, tc_().tensordict_form_(detail::NonTensorFields::Stacks), tags, options);
  }

  // An instance from a loaded tensordict form (memmap: batch sizes as stored;
  // h5: inferred from the schema), validated; errors are prefixed with `where`.
  static Derived from_loaded_(const TensorDict& td, const std::string& where, bool infer_batch) {
    Derived out;
    try {
      detail::tc(out).read_loaded_(td, std::string(TensorClass<Derived>::schema().name), std::nullopt, infer_batch);
      detail::tc(out).validate();
    } catch (...) {
      rethrow_reworded([&](std::string_view what) { return where + ": " + std::string(what); });
    }
    return out;
  }

  // Where memmap() wrote this instance or load_memmap() read it; not copied
  // by ops (what they derive is not memory-mapped there).
  std::optional<std::string> saved_path_;
};

template <class Derived>
void append_memmap(const std::string& prefix, const TensorClassPersistence<Derived>& rows,
                   const MemmapOptions& options) {
  rows.append_to_(prefix, options);
}

}  // namespace tensordict
