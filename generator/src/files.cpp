#include "tcgen/files.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace tcgen {
namespace {

const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return " (a directory)";
    case fs::file_type::fifo: return " (a FIFO)";
    case fs::file_type::character: return " (a character device)";
    case fs::file_type::block: return " (a block device)";
    case fs::file_type::socket: return " (a socket)";
    default: return "";
  }
}

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t max_bytes,
                                             std::string_view what, std::string& out) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec) return ec.message();
  if (!fs::is_regular_file(status)) return std::string("not a regular file") + kind_of(status.type());
  if (fs::file_size(path, ec) > max_bytes)
    return fmt::format("larger than {} MiB, the limit for {}", max_bytes >> 20, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("cannot open it");
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  if (in.bad()) return std::string("read error");
  return std::nullopt;
}

}  // namespace tcgen
