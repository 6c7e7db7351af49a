// Writing .tdz archives: the tree is written as a directory staged beside the
// archive (the one memmap writer), then packed into a zip in tensordict's
// order (meta.json first at every level, then the level's other files, then
// its sub-directories, each sorted by name), tensor payloads 64-byte aligned
// when stored. The archive replaces the target in one rename.
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/format.h"
#include "memmap/archive_tree.h"
#include "memmap/memmap_detail.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/detail/impl.h"
#include "tensordict/memmap.h"
#include "tensordict/remove_tree.h"
#include "zip/zip_writer.h"

namespace tensordict {
namespace detail::memmap {
namespace {

// Adds the files of `dir` (entry names under `name`) to `zip`, then its
// sub-directories. Links and special files are refused: nothing outside the
// tree is packed.
void pack_level(zip::ZipWriter& zip, const fs::path& dir, const std::string& name,
                std::optional<ArchiveCompression> compression) {
  std::vector<fs::path> files, dirs;
  for (const auto& child : fs::directory_iterator(dir)) {
    const auto st = fs::symlink_status(child.path());
    if (fs::is_symlink(st)) {
      throw ValueError(fmt::format("cannot pack {}: it is a symbolic link (packing follows no link)",
                                   child.path().string()));
    }
    if (fs::is_directory(st)) {
      dirs.push_back(child.path());
    } else if (fs::is_regular_file(st)) {
      files.push_back(child.path());
    } else {
      throw ValueError(fmt::format("cannot pack {}: it is not a regular file", child.path().string()));
    }
  }
  const auto order = [](const fs::path& a, const fs::path& b) {
    const bool a_meta = a.filename() == "meta.json", b_meta = b.filename() == "meta.json";
    return a_meta != b_meta ? a_meta : a.filename().string() < b.filename().string();
  };
  std::sort(files.begin(), files.end(), order);
  std::sort(dirs.begin(), dirs.end(), order);
  for (const fs::path& file : files) {
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
      throw RuntimeError(fmt::format("cannot pack {}: {}", file.string(), std::strerror(errno)));
    }
    const zip::ZipWriter::Source source = [&](char* buffer, std::size_t n) -> std::size_t {
      for (;;) {
        const ssize_t got = ::read(fd.get(), buffer, n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw RuntimeError(fmt::format("cannot pack {}: {}", file.string(), std::strerror(errno)));
        return static_cast<std::size_t>(got);
      }
    };
    const bool payload = file.extension() == ".memmap";
    const uint16_t method = payload && compression == ArchiveCompression::Deflate ? zip::kDeflated : zip::kStored;
    zip.add(name + file.filename().string(), static_cast<uint64_t>(st.st_size), source, method, payload);
  }
  for (const fs::path& sub : dirs) pack_level(zip, sub, name + sub.filename().string() + "/", compression);
}

// A fresh directory beside `target` for staging its tree.
fs::path make_staging(const fs::path& target) {
  std::string pattern = (target.parent_path() / fmt::format(".{}.tdz-XXXXXX", target.filename().string())).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw RuntimeError(fmt::format("cannot write the archive {}: cannot create a staging directory beside it: {}",
                                   target.string(), std::strerror(errno)));
  }
  return pattern;
}

// Refuses what tensordict refuses before writing an archive at `target`.
void check_archive_target(const fs::path& target, bool existsok) {
  std::error_code ec;
  const auto st = fs::status(target, ec);
  if (fs::is_directory(st)) {
    throw ValueError(fmt::format("Cannot write an archive at {}: it is an existing directory.", target.string()));
  }
  if (fs::exists(st) && !existsok) {
    throw RuntimeError(fmt::format(
        "A file already exists at {}, cannot save the tensordict there. Set existsok=true to overwrite.",
        target.string()));
  }
  fs::create_directories(target.parent_path(), ec);
  if (!fs::is_directory(target.parent_path())) {
    throw RuntimeError(fmt::format("cannot write the archive {}: cannot create its parent directory{}", target.string(),
                                   ec ? ": " + ec.message() : std::string()));
  }
}

// Packs the tree `dir` into the archive `target`, replacing it atomically.
void pack_tree(const fs::path& dir, const fs::path& target, std::optional<ArchiveCompression> compression, bool sync) {
  AtomicFile file(target);
  zip::ZipWriter zip(file.fd(), target.string());
  pack_level(zip, dir, "", compression);
  zip.finish();
  file.commit(sync);
}

}  // namespace

bool writes_archive(const std::string& prefix, const MemmapOptions& options) {
  if (options.archive) return *options.archive;
  return !prefix.empty() && target_dir(prefix).extension() == ".tdz";
}

std::shared_ptr<TensorDictImpl> write_archive(const std::shared_ptr<TensorDictImpl>& impl, const std::string& prefix,
                                              Mode mode, const MemmapOptions& options, const MemmapClassTags* tags) {
  const fs::path target = target_dir(prefix);
  check_archive_target(target, options.existsok);
  const fs::path staging = make_staging(target);
  try {
    MemmapOptions staged = options;
    staged.archive = false;
    staged.compression = std::nullopt;
    staged.sync = false;  // the archive is synced, not its staging
    write_tree(impl, (staging / "tree").string(), mode, staged, tags);
    pack_tree(staging / "tree", target, options.compression, options.sync);
  } catch (...) {
    std::error_code ec;
    remove_tree(staging, ec);
    throw;
  }
  remove_tree(staging);
  TensorDict out;
  read_archive(target, /*writable=*/mode == Mode::Like, [&] { out = load_level(target, std::nullopt); });
  return out.impl();
}

}  // namespace detail::memmap

bool is_memmap_archive(const std::string& path) {
  if (!detail::memmap::regular_file_at(path)) return false;
  try {
    detail::memmap::read_archive(path, false, [] {});
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void unpack_memmap(const std::string& archive, const std::string& prefix) {
  using namespace detail::memmap;
  if (!regular_file_at(archive)) throw ValueError(fmt::format("{} is not a memory-mapped tensordict archive.", archive));
  const fs::path target = target_dir(prefix);
  refuse_symlink(target);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  // Written as a memmap() is: a tree staged beside the target, created through
  // the staging directory's descriptor (an entry's name reaches nothing
  // outside it), then published in one step; other files in `prefix` stay.
  PrefixLock lock(target);
  remove_stale_staging(target);
  StagingDir staging(target);
  try {
    read_archive(archive, /*writable=*/false, [&] {
      active_archive()->for_each_entry(
          [&](const std::string& name, const at::Tensor& bytes) {
            const fs::path file = staging.path() / name;
            for (fs::path dir = staging.path(); const auto& part : fs::path(name).parent_path()) {
              dir /= part;
              make_dir(staging, dir);
            }
            write_data_file(file, bytes, static_cast<std::size_t>(bytes.numel()), /*sync=*/true, &staging);
          },
          [&](const std::string& name) {
            fs::path dir = staging.path();
            for (const auto& part : fs::path(name)) {
              dir /= part;
              make_dir(staging, dir);
            }
          });
    });
    if (fs::exists(fs::symlink_status(target, ec))) carry_over(target, staging);
    publish_dir(staging, target, /*sync=*/true);
  } catch (...) {
    remove_tree(staging.path(), ec);
    throw;
  }
}

void pack_memmap(const std::string& prefix, const std::string& archive, std::optional<ArchiveCompression> compression) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(prefix).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(dir / "meta.json", ec)) {
    throw ValueError(fmt::format(
        "{} does not look like a memory-mapped tensordict directory (no meta.json found).", prefix));
  }
  const fs::path target = detail::memmap::target_dir(archive);
  const fs::path canonical_dir = fs::weakly_canonical(dir, ec), canonical_target = fs::weakly_canonical(target, ec);
  const auto rel = canonical_target.lexically_relative(canonical_dir);
  if (!rel.empty() && *rel.begin() != "..") {
    throw ValueError(fmt::format("The archive path {} must be outside the source directory {} and must not alias a "
                                 "source file.",
                                 archive, prefix));
  }
  detail::memmap::check_archive_target(target, /*existsok=*/true);
  detail::memmap::pack_tree(dir, target, compression, /*sync=*/true);
}

}  // namespace tensordict
