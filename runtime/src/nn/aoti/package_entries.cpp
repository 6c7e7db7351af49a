#include "nn/aoti/package_entries.h"

#include <fmt/format.h>

#include <fstream>

#include "tensordict/errors.h"
#include "zip/zip_directory.h"

namespace tensordict::nn::aoti {

void check_package_entries(const std::string& path) {
  const std::string what = fmt::format("AOTIModule: package '{}'", path);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw RuntimeError(fmt::format("{} cannot be read as a zip archive: it cannot be opened", what));
  const auto size = static_cast<uint64_t>(in.tellg());
  const detail::zip::ReadAt read_at = [&](uint64_t offset, uint64_t n) {
    std::string bytes(n, '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    bytes.resize(in ? n : static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    in.clear();
    return bytes;
  };
  for (const detail::zip::Entry& entry : detail::zip::read_directory(what, size, read_at).entries) {
    if (const auto why = detail::zip::unsafe_name(entry)) {
      throw RuntimeError(fmt::format(
          "{} has an entry '{}' that {}; the loader extracts entries by name under a temporary directory, so the "
          "package is refused before anything is extracted",
          what, entry.name, *why));
    }
  }
}

}  // namespace tensordict::nn::aoti
