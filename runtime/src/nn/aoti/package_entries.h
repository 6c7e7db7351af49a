// The entry names of a package (a zip archive), checked before torch's
// loader extracts it: torch writes each entry under a temporary directory by
// its name, so a name that climbs out of it ("../x"), an absolute name or a
// symbolic link would write elsewhere, before any check of the metadata.
#pragma once

#include <string>

namespace tensordict::nn::aoti {

// Reads the package's zip directory (zip/zip_directory.h) and refuses
// (RuntimeError naming the entry) a name that is empty or absolute, holds a
// ".." part, a backslash or a NUL, or an entry that is a symbolic link.
void check_package_entries(const std::string& path);

}  // namespace tensordict::nn::aoti
