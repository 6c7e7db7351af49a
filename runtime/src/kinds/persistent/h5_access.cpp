// How h5 files are opened and their links followed: only regular files, and
// never a link into another file.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "core/format.h"
#include "kinds/persistent/h5_detail.h"

namespace tensordict::detail::h5 {

void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

hid_t H5File::id(const std::string& what) const {
  if (!file.valid()) throw RuntimeError(fmt::format("the h5 file {} is closed (accessing {})", path, what));
  return file.get();
}

void require_regular_file(const std::string& path, const std::string& mode) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // the mode decides whether a missing file is created
    throw RuntimeError(fmt::format("cannot open h5 file {} in mode '{}': {}", path, mode, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw RuntimeError(fmt::format("cannot open h5 file {} in mode '{}': not a regular file", path, mode));
  }
}

Hid no_external_links() {
  Hid lapl(H5Pcreate(H5P_LINK_ACCESS), H5Pclose);
  H5Pset_elink_cb(
      lapl.get(),
      [](const char*, const char*, const char*, const char*, unsigned*, hid_t, void*) -> herr_t { return -1; },
      nullptr);
  return lapl;
}

}  // namespace tensordict::detail::h5
