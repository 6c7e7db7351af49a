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

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/memmap.h"
#include "tensordict/persistent.h"
#include "tensordict/schema.h"
#include "tensordict/detail/tensorclass_fields.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict {

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
  Derived memmap(const std::string& prefix, const MemmapOptions& options = {}) const;
  // tensordict's memmap_like: the same layout with zero-filled tensors of the
  // fields' shapes and dtypes (nothing is copied), non-tensor fields kept.
  Derived memmap_like(const std::string& prefix, const MemmapOptions& options = {}) const;
  // memmap() in place: the tensor members become the mapped ones. A shared
  // instance (share_memory_) is refused: memmap and shared memory exclude
  // each other (tensordict's rule).
  Derived& memmap_(const std::string& prefix, const MemmapOptions& options = {});
  // Loads what memmap() (or Python tensordict) wrote at `prefix`: tensors are
  // memory-mapped, non-tensor fields come from meta.json (schema defaults when
  // absent). Validated like construction; errors also name the directory.
  static Derived load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt);
  // Lets tensordict::load_memmap / TensorDict::load_memmap read directories of
  // this class (and of its nested tensorclasses) as TensorDicts holding the
  // tensor fields and the non-tensor ones as NonTensorData. load_memmap calls it.
  static void register_memmap();
  // Writes the tensordict form to a new h5 file: tensor fields as datasets,
  // string fields as tensordict's string datasets. h5 stores no other
  // non-tensor data: such a field holding its schema default is left out (on
  // load it takes the default again); any other value is refused, naming the
  // field, rather than lost (memmap() stores every field).
  PersistentTensorDict to_h5(const std::string& path, const H5Options& options = {}) const;
  // tensordict's save / load: memmap() and load_memmap().
  Derived save(const std::string& prefix, const MemmapOptions& options = {}) const;
  static Derived load(const std::string& prefix, std::optional<at::Device> device = std::nullopt);
  // True for an instance memmap()/memmap_() wrote or load_memmap() loaded
  // (not for what ops derive from it, as for a TensorDict).
  bool is_memmap() const { return saved_path_.has_value(); }
  // The directory it was written to or loaded from.
  const std::optional<std::string>& saved_path() const { return saved_path_; }
  // Reads an h5 file written by to_h5 (or h5py): the batch size comes from the
  // schema's declared shapes, non-tensor fields take their defaults. Validated.
  static Derived from_h5(const std::string& path);

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
  Derived written_(const std::string& prefix, const MemmapOptions& options, MemmapContent content) const;

  // The tags that make memmap_tensorclass write this level (at `path`) and
  // every nested tensorclass in tensorclass layout.
  void collect_tags_(MemmapClassTags& tags, std::vector<std::string> path) const;

  // append_memmap with this instance as the rows: its tensordict form plus
  // the tags of its tensorclass levels, as memmap() writes them.
  void append_to_(const std::string& prefix, const MemmapOptions& options) const;

  // An instance from a loaded tensordict form (memmap: batch sizes as stored;
  // h5: inferred from the schema), validated; errors are prefixed with `where`.
  static Derived from_loaded_(const TensorDict& td, const std::string& where, bool infer_batch);

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
