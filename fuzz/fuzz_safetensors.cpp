// Fuzzes from_safetensors: the input is a whole safetensors file (header
// length, JSON header with tensordict's metadata, data).
//
// Reading must either give a tensordict whose every leaf can be read, or
// throw a std::exception; what was read writes (to_safetensors) and reads
// back with the same keys and batch size, unless the writer refuses it.
#include <ATen/ATen.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "fuzz_scratch.h"
#include "tensordict/safetensors.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& root = fuzz::fresh_scratch_root("tc_fuzz_safetensors");
  const fs::path file = root / "td.safetensors";
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  tensordict::TensorDict td;
  try {
    td = tensordict::from_safetensors(file.string());
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
    return 0;
  }
  for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) {
    auto value = td.get_value(key);
    if (!value || !value->is_tensor() || value->tensor().numel() == 0) continue;
    volatile int64_t sink = value->tensor().contiguous().view({-1}).view(at::kByte).sum().item<int64_t>();
    (void)sink;
  }
  try {
    const fs::path again = root / "again.safetensors";
    tensordict::to_safetensors(td, again.string());
    const tensordict::TensorDict back = tensordict::from_safetensors(again.string());
    if (back.num_keys() != td.num_keys() || back.batch_size() != td.batch_size()) {
      std::fprintf(stderr, "fuzz_safetensors: round trip changed the tensordict\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
