// Fuzzes load_memmap of a .tdz archive: the input is the whole archive (zip
// records, meta.json entries, stored and deflated payloads).
//
// Loading must either give a tensordict whose every leaf can be read, or
// throw a std::exception; nothing is written anywhere, and what was loaded
// saves as an archive again (or the writer refuses it with a message).
#include <ATen/ATen.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "fuzz_scratch.h"
#include "tensordict/memmap.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& root = fuzz::fresh_scratch_root("tc_fuzz_tdz");
  const fs::path file = root / "td.tdz";
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  tensordict::TensorDict td;
  try {
    td = tensordict::TensorDict::load_memmap(file.string());
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
    return 0;
  }
  for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) {
    auto value = td.get_value(key);
    if (!value || !value->is_tensor() || value->tensor().numel() == 0) continue;
    const at::Tensor t = value->tensor();
    volatile int64_t sink = t.is_nested() ? t.numel() : t.contiguous().view({-1}).view(at::kByte).sum().item<int64_t>();
    (void)sink;
  }
  try {
    (void)td.save((root / "again.tdz").string());
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
