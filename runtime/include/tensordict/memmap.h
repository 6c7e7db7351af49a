// Memmap extension points: loaders for classes the dynamic reader does not
// know (tensorclasses) and the hooks generated tensorclasses save and load
// through. The methods themselves are on TensorDict (memmap_, memmap,
// memmap_like, save, is_memmap, saved_path, memmap_refresh_, load_memmap,
// load) and LazyStackedTensorDict (load_memmap).
#pragma once

#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>
#include <nlohmann/json_fwd.hpp>

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

// ---- tensorclass levels (the typed engine's: detail/tensorclass_memmap.h) ---------
// The tag of a level written in tensorclass layout, declared here so that
// TensorClassPersistence can name it; the tensorclass levels of a tree, by
// key path ({} is the root).
struct MemmapClassTag;
using MemmapClassTags = std::map<std::vector<std::string>, MemmapClassTag>;

// What memmap_tensorclass writes into the leaves' files: their values
// (memmap) or zeros of their shapes and dtypes (memmap_like).
enum class MemmapContent : uint8_t { Copy, Like };

}  // namespace tensordict
