// Memmap extension points: loaders for classes the dynamic reader does not
// know (tensorclasses) and the hooks generated tensorclasses save and load
// through. The methods themselves are on TensorDict (memmap_, memmap,
// memmap_like, save, is_memmap, saved_path, memmap_refresh_, load_memmap,
// load) and LazyStackedTensorDict (load_memmap).
#pragma once

#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

// Loads the directory `dir` whose meta.json is `meta` (a tensorclass level:
// non-tensor fields in meta.json, tensor fields in `dir/_tensordict/`, which
// TensorDict::load_memmap reads).
using MemmapLoader = std::function<Value(const std::string& dir, const Json& meta, std::optional<at::Device> device)>;

// Registers `loader` for the `_type` string Python writes (str(cls), e.g.
// "<class 'rl.Observation'>") or for the bare class name ("Observation"),
// which is tried when no full string matches. A later registration replaces
// an earlier one.
void register_memmap_class(const std::string& type, MemmapLoader loader);

// The non-tensor entry that names the class of a tensorclass directory loaded
// without a registered loader: such a directory (a Python @tensorclass, whose
// meta.json `_type` is e.g. "<class '__main__.Obs'>") loads as a TensorDict of
// its fields (load_tensorclass_level) plus this entry holding `_type`.
inline constexpr std::string_view kLoadedClassKey = "__class__";

// Loads a tree written by memmap() at any level as the class its meta.json
// names: a TensorDict, a LazyStackedTensorDict, what a registered loader
// returns, or for any other class a TensorDict of its fields (see
// kLoadedClassKey). TensorDict::load_memmap is the same.
// `options.copy`: read the leaves into memory instead of mapping them (LoadOptions).
TensorDict load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt,
                       const LoadOptions& options = {});

// ---- .tdz archives (tensordict's _archive.py) --------------------------------------
// memmap(), memmap_like() and save() write an archive for a prefix ending in
// ".tdz" or with MemmapOptions::archive; load_memmap() and load() read one
// given its path. An archive is a zip file whose entries are the tree's
// files; stored tensor payloads are 64-byte aligned, and loaded leaves view
// one copy-on-write mapping of the file (not memory-mapped trees: is_memmap()
// is false, as in tensordict).
//
// Whether `path` is an archive: a zip file with a top-level meta.json entry
// (tensordict's is_memmap_archive). A directory, a missing path or another
// file gives false.
bool is_memmap_archive(const std::string& path);
// Packs the directory `prefix` that memmap() wrote into the archive `archive`
// (outside it; replaced atomically if it exists). ValueError when `prefix`
// has no meta.json, or `archive` lies inside it; links and special files in
// the directory are refused.
void pack_memmap(const std::string& prefix, const std::string& archive,
                 std::optional<ArchiveCompression> compression = std::nullopt);
// Extracts the archive `archive` into the directory `prefix` (created if
// missing), as `unzip` does: a memmap tree load_memmap reads. Entries are
// inflated and their CRC-32 checked; the tree appears whole, in one step (as
// memmap() publishes one), and files of `prefix` the archive does not hold
// stay. ValueError when `archive` is not an archive.
void unpack_memmap(const std::string& archive, const std::string& prefix);

// ---- tensorclass levels (used by TensorClass<Derived>) ----------------------------
// How a level is written in tensorclass layout: `type` is its meta.json
// `_type` (str(cls) in Python), `fields` the non-tensor fields that follow it
// there, in order.
struct MemmapClassTag {
  std::string type;
  Json fields = Json::object();
};
// The tensorclass levels of a tree, by key path ({} is the root).
using MemmapClassTags = std::map<std::vector<std::string>, MemmapClassTag>;

// What memmap_tensorclass writes into the leaves' files: their values
// (memmap) or zeros of their shapes and dtypes (memmap_like).
enum class MemmapContent : uint8_t { Copy, Like };

// memmap() of `td` where the levels in `tags` are written as tensorclasses:
// `<dir>/meta.json` holds the tag, the level's entries go to `<dir>/_tensordict/`.
// Returns the memory-mapped copy (tensorclass levels as plain TensorDicts).
TensorDict memmap_tensorclass(const TensorDict& td, const std::string& prefix, const MemmapClassTags& tags,
                              const MemmapOptions& options = {}, MemmapContent content = MemmapContent::Copy);

// tensordict.append_memmap(prefix, rows): the tree that memmap() or save()
// wrote at `prefix` grows along its first batch dim by the rows of `rows`
// (any kind: a TensorDict, a lazy stack, a view...), which must have the
// saved tree's keys, classes, dtypes and shapes except in the first dim. A
// non-tensor entry stays as saved, and the rows must hold its value; a
// saved NonTensorStack, lazy stack or nested tensor cannot grow. Everything
// is checked before the first byte is written (ValueError naming the entry,
// tensordict's messages). Data files grow in place past the saved rows; the
// new meta.json files are published with the tree in one atomic step, so a
// reader (load_memmap, memmap_refresh_) sees the old rows or the new ones,
// never a mix, and a failed or killed append leaves the old tree. Writers of
// the prefix (memmap, append_memmap) take turns on its lock; `options` gives
// `sync` and `lock_timeout` (the others do not apply).
void append_memmap(const std::string& prefix, const TensorDict& rows, const MemmapOptions& options = {});

// append_memmap where the levels `tags` names are tensorclasses (a generated
// tensorclass's rows: tensordict_form + tags, as memmap_tensorclass takes
// them); their class must be the saved one.
void append_memmap_tensorclass(const std::string& prefix, const TensorDict& rows, const MemmapClassTags& tags,
                               const MemmapOptions& options = {});

// Reads and parses `dir`/meta.json; errors name the file.
Json read_memmap_meta(const std::string& dir);

// Runs `read`, which reads the tree at `prefix` (read_memmap_meta,
// load_tensorclass_level...), on one version of it: the reads inside go
// through one descriptor of the tree, and when a writer replaces the tree
// meanwhile, `read` runs again on the new one. load_memmap does this itself.
void read_memmap_tree(const std::string& prefix, c10::function_ref<void()> read);

// The dynamic form of the tensorclass level at `dir` (meta.json `meta`): the
// tensor fields of `dir/_tensordict/` (memory-mapped, nested tensorclasses
// through their registered loaders) plus one NonTensorData entry per non-null
// non-tensor field of meta.json (null ones, unset optional tensor fields as
// Python writes them, are left out).
TensorDict load_tensorclass_level(const std::string& dir, const Json& meta, std::optional<at::Device> device);

}  // namespace tensordict
