// Fuzzes TensorDict::from_consolidated's metadata parser: the input is the
// metadata of a consolidated file whose data is 64 fixed bytes (the file is
// the data, the input, then the input's length as tensordict writes it).
//
// Reading must either give a tensordict whose every leaf can be read in full,
// or throw a std::exception; a tensordict read consolidates into a new file
// that reads back with the same keys and batch size.
#include <ATen/ATen.h>

#include <array>
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

constexpr tensordict::KeysOptions kLeaves{.include_nested = true, .leaves_only = true};

void write_file(const fs::path& path, std::string_view metadata) {
  std::string bytes(64, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 37 + 11);
  bytes += metadata;
  auto n = static_cast<uint64_t>(metadata.size());
  for (int i = 0; i < 8; ++i, n >>= 8) bytes += static_cast<char>(n & 0xff);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& root = fuzz::fresh_scratch_root("tc_fuzz_consolidated");
  const fs::path file = root / "td.bin";
  write_file(file, std::string_view(reinterpret_cast<const char*>(data), size));

  try {
    const tensordict::TensorDict td = tensordict::TensorDict::from_consolidated(file.string());
    // Touch every byte of every leaf (a view past the mapping would fault
    // here), and the repr.
    for (const auto& key : td.keys(kLeaves)) {
      auto value = td.get_value(key);
      if (!value || !value->is_tensor()) continue;
      const at::Tensor t = value->tensor();
      if (t.numel() == 0) continue;
      volatile int64_t sink = t.contiguous().view({-1}).view(at::kByte).sum().item<int64_t>();
      (void)sink;
    }
    std::ostringstream os;
    os << td;
    const fs::path again = root / "again.bin";
    td.consolidate({.filename = again.string()});
    const tensordict::TensorDict back = tensordict::TensorDict::from_consolidated(again.string());
    if (back.num_keys() != td.num_keys() || back.batch_size() != td.batch_size()) {
      std::fprintf(stderr, "fuzz_consolidated: round trip changed the tensordict\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
