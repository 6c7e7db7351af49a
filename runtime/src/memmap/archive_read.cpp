#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/format.h"
#include "memmap/archive_tree.h"
#include "zip/zip_codec.h"

namespace tensordict::detail::memmap {
namespace {

// Deflate encodes at most 258 bytes in a bit or so: 1032 bytes out per byte
// in is its limit. An entry claiming more is not a deflate stream of its bytes.
constexpr uint64_t kDeflateMaxRatio = 1032;

std::string describe(const fs::path& path) { return fmt::format("the archive {}", path.string()); }

// tensordict writes entries by their paths in the tree: "a/b.memmap". Empty
// and "." parts would name one file twice.
bool normal_name(std::string_view name) {
  if (name.ends_with('/')) name.remove_suffix(1);
  for (std::string_view rest = name;;) {
    const auto slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == ".") return false;
    if (slash == std::string_view::npos) return true;
    rest.remove_prefix(slash + 1);
  }
}

std::string method_name(uint16_t method) {
  switch (method) {
    case 12:
      return "bzip2 (12)";
    case 14:
      return "lzma (14)";
    default:
      return std::to_string(method);
  }
}

}  // namespace

ArchiveTree::ArchiveTree(const fs::path& path, bool writable) : path_(path), writable_(writable) {
  const std::string what = describe(path);
  fd_ = UniqueFd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (fd_.get() < 0 || ::fstat(fd_.get(), &st) != 0) {
    throw RuntimeError(fmt::format("cannot load a memmap tensordict from {}: {}", path.string(), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw RuntimeError(fmt::format("{} is not a regular file", what));
  size_ = static_cast<uint64_t>(st.st_size);
  const zip::ReadAt read = [this](uint64_t offset, uint64_t n) { return read_at(offset, n); };
  const zip::Directory directory = zip::read_directory(what, size_, read);
  std::vector<const Item*> by_offset;
  dirs_.insert(".");
  for (const zip::Entry& entry : directory.entries) {
    const auto refuse = [&](std::string_view why) {
      throw RuntimeError(fmt::format("{}: its entry '{}' {}", what, entry.name, why));
    };
    if (const auto why = zip::unsafe_name(entry)) refuse(*why);
    if (!normal_name(entry.name)) refuse("has an empty or '.' part in its name");
    if (entry.is_encrypted()) refuse("is encrypted");
    const std::string name = entry.is_directory() ? entry.name.substr(0, entry.name.size() - 1) : entry.name;
    // Every parent of an entry is a directory of the tree.
    for (fs::path parent = fs::path(name).parent_path(); !parent.empty(); parent = parent.parent_path()) {
      dirs_.insert(parent.string());
    }
    if (entry.is_directory()) {
      dirs_.insert(name);
      continue;
    }
    if (entry.method == zip::kStored && entry.compressed_size != entry.size) {
      refuse(fmt::format("is stored with {} bytes but records {} uncompressed", entry.compressed_size, entry.size));
    }
    if (entry.method == zip::kDeflated && entry.size / kDeflateMaxRatio > entry.compressed_size) {
      refuse(fmt::format("claims {} bytes inflated from {} deflated bytes, more than deflate can encode in them",
                         entry.size, entry.compressed_size));
    }
    Item item{entry, zip::payload_offset(what, entry, directory.offset, read)};
    const auto [it, fresh] = items_.emplace(name, std::move(item));
    if (!fresh) refuse("appears twice");
    by_offset.push_back(&it->second);
  }
  for (const auto& [name, item] : items_) {
    if (dirs_.count(name)) {
      throw RuntimeError(fmt::format("{}: '{}' is both an entry and a directory", what, name));
    }
  }
  // No two entries share bytes: a write through one leaf would change another.
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Item* a, const Item* b) { return a->entry.header_offset < b->entry.header_offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const Item& before = *by_offset[i - 1];
    if (before.payload + before.entry.compressed_size > by_offset[i]->entry.header_offset) {
      throw RuntimeError(fmt::format("{}: its entries '{}' and '{}' overlap", what, before.entry.name,
                                     by_offset[i]->entry.name));
    }
  }
  if (!items_.count("meta.json")) {
    throw ValueError(fmt::format("{} is a file but not a memory-mapped tensordict archive (expected a zip file with a "
                                 "top-level meta.json entry)",
                                 path.string()));
  }
}

std::size_t ArchiveTree::read_into(uint64_t offset, uint64_t n, char* out) const {
  n = offset < size_ ? std::min(n, size_ - offset) : 0;
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_.get(), out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::string ArchiveTree::read_at(uint64_t offset, uint64_t n) const {
  std::string bytes(static_cast<std::size_t>(offset < size_ ? std::min(n, size_ - offset) : 0), '\0');
  bytes.resize(read_into(offset, bytes.size(), bytes.data()));
  return bytes;
}

bool ArchiveTree::is_dir(const fs::path& rel) const { return dirs_.count(rel.string()) > 0; }

bool ArchiveTree::exists(const fs::path& rel) const { return is_dir(rel) || items_.count(rel.string()) > 0; }

const ArchiveTree::Item& ArchiveTree::item(const fs::path& rel, const fs::path& shown) const {
  const auto it = items_.find(rel.string());
  if (it == items_.end()) {
    throw RuntimeError(fmt::format("cannot load a memmap tensordict from {}: {} is missing (no entry '{}')",
                                   path_.string(), shown.string(), rel.string()));
  }
  return it->second;
}

at::Tensor ArchiveTree::content(const Item& item, const fs::path& shown) const {
  const zip::Entry& entry = item.entry;
  if (entry.method != zip::kStored && entry.method != zip::kDeflated) {
    throw RuntimeError(fmt::format("{}: the entry '{}' is compressed with method {}; this reader reads stored (0) and "
                                   "deflated (8) entries (save the archive with compression stored or deflate)",
                                   describe(path_), entry.name, method_name(entry.method)));
  }
  at::Tensor out = at::empty({static_cast<int64_t>(entry.size)}, at::kByte);
  const std::string what = fmt::format("{}: the entry '{}' ({})", describe(path_), entry.name, shown.string());
  if (entry.method == zip::kStored) {
    // Straight into the tensor: no copy in between.
    if (read_into(item.payload, entry.size, static_cast<char*>(out.data_ptr())) != entry.size) {
      throw RuntimeError(fmt::format("{}: it ends early", what));
    }
    return out;
  }
  const std::string deflated = read_at(item.payload, entry.compressed_size);
  if (deflated.size() != entry.compressed_size) throw RuntimeError(fmt::format("{}: it ends early", what));
  zip::inflate_exact(deflated, out.data_ptr(), entry.size, entry.crc32, what);
  return out;
}

std::string ArchiveTree::text(const fs::path& rel, const fs::path& shown, std::size_t max_bytes) const {
  const Item& found = item(rel, shown);
  if (found.entry.size > max_bytes) {
    throw RuntimeError(fmt::format("{} has {} bytes, more than the {} a meta.json may have", shown.string(),
                                   found.entry.size, max_bytes));
  }
  const at::Tensor bytes = content(found, shown);
  const auto* p = static_cast<const char*>(bytes.data_ptr());
  if (found.entry.method == zip::kStored && zip::crc32(p, found.entry.size) != found.entry.crc32) {
    throw RuntimeError(fmt::format("{}: the entry '{}' ({}) does not match its CRC-32", describe(path_),
                                   found.entry.name, shown.string()));
  }
  return std::string(p, found.entry.size);
}

at::Tensor ArchiveTree::leaf(const fs::path& rel, const fs::path& shown, at::ScalarType dtype, at::IntArrayRef shape,
                             std::string_view key, bool copy) const {
  const std::size_t need = checked_byte_size(shape, dtype, shown);
  // tensordict writes no entry for an empty leaf (nor reads one, as for a directory).
  if (need == 0) return at::empty(shape, at::TensorOptions().dtype(dtype));
  const Item& found = item(rel, shown);
  if (found.entry.size < need) {
    throw RuntimeError(fmt::format("the data file {} of key '{}' is truncated: it has {} bytes, shape {} of {} needs {} "
                                   "bytes",
                                   shown.string(), key, found.entry.size, shape_string(shape), c10::toString(dtype),
                                   need));
  }
  const auto itemsize = static_cast<uint64_t>(c10::elementSize(dtype));
  const bool in_place = found.entry.method == zip::kStored && found.payload % itemsize == 0;
  if (!in_place && writable_) {
    throw RuntimeError(fmt::format("{}: the entry '{}' of key '{}' is {}, so writes to it could not reach the file",
                                   describe(path_), found.entry.name, key,
                                   found.entry.method == zip::kStored ? "not aligned for its dtype" : "compressed"));
  }
  // Read into memory (LoadOptions::copy: nothing stays mapped), or a view of
  // the mapping's storage, made in one step.
  if (!in_place || copy) {
    return content(found, shown).narrow(0, 0, static_cast<int64_t>(need)).view(dtype).view(shape);
  }
  if (!mapping_.defined()) mapping_ = map_fd(fd_.get(), size_, path_, writable_);
  at::Tensor leaf = at::empty({0}, at::TensorOptions().dtype(dtype));
  leaf.set_(mapping_.storage(), static_cast<int64_t>(found.payload / itemsize), shape);
  return leaf;
}

void ArchiveTree::for_each_entry(const std::function<void(const std::string&, const at::Tensor&)>& file,
                                 const std::function<void(const std::string&)>& dir) const {
  for (const std::string& name : dirs_) {
    if (name != ".") dir(name);
  }
  for (const auto& [name, found] : items_) {
    const fs::path shown = path_ / name;
    const at::Tensor bytes = content(found, shown);
    if (found.entry.method == zip::kStored && zip::crc32(bytes.data_ptr(), found.entry.size) != found.entry.crc32) {
      throw RuntimeError(fmt::format("{}: the entry '{}' does not match its CRC-32", describe(path_), name));
    }
    file(name, bytes);
  }
}

}  // namespace tensordict::detail::memmap
