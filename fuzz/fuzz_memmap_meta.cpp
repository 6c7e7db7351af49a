// Fuzzes TensorDict::load_memmap: meta.json plus data files. The input is a
// small archive: the root meta.json, then any number of files, each
// introduced by a line "--- <relative path>":
//
//   {"a": {"device": "cpu", "shape": [2], "dtype": "torch.float32", "is_nested": false}, "shape": [2], ...}
//   --- a.memmap
//   <bytes>
//   --- sub/meta.json
//   {...}
//
// Loading must either give a tree whose every leaf can be read in full, or
// throw a std::exception; reading must never leave the mapped files.
#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_scratch.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;

namespace {

// Non-tensor entries too: a round trip keeps them.
constexpr tensordict::KeysOptions kLeaves{
    .include_nested = true, .leaves_only = true, .is_leaf = tensordict::IsLeaf::NonTensor};

bool safe_path(std::string_view p) {
  if (p.empty() || p.size() > 64 || p.front() == '/') return false;
  std::size_t depth = 0;
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = std::min(p.find('/', start), p.size());
    const std::string_view part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '%' || c == '-';
      if (!ok) return false;
    }
    if (++depth > 4) return false;
    start = end + 1;
  }
  return true;
}

void write(const fs::path& path, std::string_view content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream(path, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& root = fuzz::scratch_root("tc_fuzz_memmap");
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const fs::path dir = root / "t";
  std::error_code ec;
  tensordict::remove_tree(root, ec);
  fs::create_directories(dir);

  constexpr std::string_view sep = "\n--- ";
  std::size_t pos = in.find(sep);
  write(dir / "meta.json", in.substr(0, pos));
  while (pos != std::string_view::npos) {
    const std::size_t name_start = pos + sep.size();
    const std::size_t name_end = in.find('\n', name_start);
    if (name_end == std::string_view::npos) break;
    const std::size_t next = in.find(sep, name_end);
    const std::string_view name = in.substr(name_start, name_end - name_start);
    const std::string_view body =
        in.substr(name_end + 1, next == std::string_view::npos ? std::string_view::npos : next - name_end - 1);
    if (safe_path(name)) write(dir / std::string(name), body);
    pos = next;
  }

  try {
    tensordict::TensorDict td = tensordict::TensorDict::load_memmap(dir.string());
    // Touch every byte of every leaf (a mapping shorter than the shape would
    // fault here), and the repr.
    for (const auto& key : td.keys(kLeaves)) {
      auto value = td.get_value(key);
      if (!value || !value->is_tensor()) continue;
      const at::Tensor t = value->tensor();
      if (t.numel() == 0) continue;
      const at::Tensor bytes = t.contiguous().view({-1}).view(at::kByte);
      volatile int64_t sink = bytes.sum().item<int64_t>();
      (void)sink;
    }
    std::ostringstream os;
    os << td;
    // Whatever loads writes back and loads again to the same tree.
    const fs::path again = root / "again";
    auto copy = td.memmap(again.string());
    auto back = tensordict::TensorDict::load_memmap(again.string());
    if (back.keys(kLeaves) != td.keys(kLeaves) || back.batch_size() != td.batch_size()) {
      std::fprintf(stderr, "fuzz_memmap_meta: round trip changed the tree\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
