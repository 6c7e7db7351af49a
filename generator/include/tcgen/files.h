// Reading the generator's inputs: regular files of a bounded size only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcgen {

// Reads `path` into `out` when it is a regular file of at most `max_bytes`;
// otherwise returns why not ("not a regular file", "larger than 4 MiB, the
// limit for <what>"). A FIFO or a device (/dev/zero) would block or never end.
std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t max_bytes,
                                             std::string_view what, std::string& out);

}  // namespace tcgen
