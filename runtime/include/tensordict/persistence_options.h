// Options of the persistence methods (memmap and h5), kept light so that
// base.h can name them without pulling in the implementations.
#pragma once

#include <optional>
#include <vector>

namespace tensordict {

// How a .tdz archive stores its tensor payloads (tensordict's compression).
enum class ArchiveCompression {
  // Uncompressed and 64-byte aligned: loaded leaves are views of one mapping.
  Stored,
  // A smaller file; loaded leaves are inflated into memory.
  Deflate,
};

// tensordict's memmap_/memmap/memmap_like keyword arguments.
struct MemmapOptions {
  // A leaf already memory-mapped to another file: false raises, true copies it
  // into the new location (tensordict's copy_existing).
  bool copy_existing = false;
  // false: raise if a leaf's file already exists (tensordict's existsok).
  bool existsok = true;
  // Threads writing leaves in parallel; 0 writes on the calling thread.
  int num_threads = 0;
  // true: every file and directory is fsynced before the tree is published,
  // so even a power loss leaves the old tree or the new one. false (as
  // Python tensordict writes): a killed process still never leaves half a
  // tree, but after a power loss the files may be incomplete; writing is then
  // bounded by memory bandwidth rather than the disk.
  bool sync = true;
  // Seconds to wait while another writer (a thread, a process, a host over
  // NFS) writes the same prefix; then a RuntimeError names its lock file.
  double lock_timeout = 600;
  // tensordict's archive: true writes the tree as one .tdz zip file at the
  // prefix (memmap, memmap_like, save), false a directory; nullopt: an
  // archive when the prefix ends in ".tdz". memmap_ always writes a directory.
  std::optional<bool> archive = std::nullopt;
  // The payloads of an archive's tensors; nullopt: Stored. Refused (ValueError)
  // for a directory.
  std::optional<ArchiveCompression> compression = std::nullopt;
};

// Options of load_memmap and from_consolidated (C++ only; tensordict always maps).
struct LoadOptions {
  // false (tensordict's behaviour): the leaves map their files; no data is
  // read until used, and in-place writes of a loaded tree reach its files.
  // A mapped file that another process truncates makes the next read or
  // write of the pages past its new end raise SIGBUS, which kills the
  // process (as with numpy.memmap and LMDB). true: the leaves are read into
  // memory at load, checked against the sizes meta.json gives, and nothing
  // stays mapped: for trees and files that processes you do not trust may
  // write. In-place writes of the result then stay in memory (memmap()
  // writes it anew).
  bool copy = false;
};

// Dataset creation options for to_h5 (h5py's create_dataset kwargs), applied to
// every tensor leaf.
struct H5Options {
  // Chunk shape; empty: no chunking unless compression needs it (then the
  // whole dataset is one chunk, as h5py's auto-chunking would pick a shape).
  std::vector<unsigned long long> chunks;
  // gzip (deflate) level 0-9; nullopt: no compression.
  std::optional<int> gzip_level;
};

}  // namespace tensordict
