// How h5 files are opened and their links followed: only regular files, and
// never a link into another file.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

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

namespace {

void check_storage_inside(hid_t dcpl, const std::string& where) {
  if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
    throw RuntimeError(fmt::format(
        "{} is a virtual dataset (its data lies in other files); only data stored in the file itself is read", where));
  }
  if (H5Pget_external_count(dcpl) > 0) {
    throw RuntimeError(fmt::format("{} keeps its data in external files (H5Pset_external); only data stored in the "
                                   "file itself is read",
                                   where));
  }
}

void check_filters(hid_t dcpl, const std::string& where) {
  const int filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    std::size_t values = 0;
    char name[256] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name, name, nullptr);
    if (id < 0 || H5Zfilter_avail(id) > 0) continue;
    throw RuntimeError(fmt::format("{} is compressed with HDF5 filter {} (\"{}\"), which this HDF5 library does not "
                                   "have; install its plugin or rewrite the file with gzip, shuffle or no filter",
                                   where, id, name));
  }
}

void check_chunk(hid_t dcpl, hid_t dset, const std::string& where) {
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return;
  const int rank = H5Pget_chunk(dcpl, 0, nullptr);
  if (rank <= 0) return;
  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
  H5Pget_chunk(dcpl, rank, chunk.data());
  Hid type(H5Dget_type(dset), H5Tclose);
  std::size_t bytes = H5Tget_size(type.get());
  for (hsize_t c : chunk) {
    if (c != 0 && bytes > kMaxChunkBytes / c) bytes = kMaxChunkBytes + 1;
    else bytes *= c;
  }
  if (bytes > kMaxChunkBytes) {
    throw RuntimeError(fmt::format("{} has chunks of {} elements, over {} MiB each: reading one element would decode a "
                                   "whole chunk; chunks are at most {} MiB here",
                                   where, fmt::join(chunk, "x"), kMaxChunkBytes >> 20, kMaxChunkBytes >> 20));
  }
}

}  // namespace

Hid open_dataset(const H5File& file, const std::string& path, const std::string& where) {
  Hid dset(H5Dopen2(file.id(path), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) return dset;
  Hid dcpl(H5Dget_create_plist(dset.get()), H5Pclose);
  if (!dcpl.valid()) throw RuntimeError(fmt::format("{}: cannot read how the dataset is stored", where));
  check_storage_inside(dcpl.get(), where);
  check_filters(dcpl.get(), where);
  check_chunk(dcpl.get(), dset.get(), where);
  return dset;
}

void check_read_size(hid_t dset, std::size_t bytes, const std::string& where) {
  if (bytes <= kMaxSparseReadBytes) return;
  const hsize_t stored = H5Dget_storage_size(dset);
  if (stored >= bytes / kMaxReadExpansion) return;
  throw RuntimeError(fmt::format("{}: reading {} bytes of it would allocate more than {} times the {} bytes the file "
                                 "stores for it (a sparse or crafted dataset); read it in slices under {} MiB",
                                 where, bytes, kMaxReadExpansion, stored, kMaxSparseReadBytes >> 20));
}

CheckedTransfer::CheckedTransfer() : dxpl_(H5Pcreate(H5P_DATASET_XFER), H5Pclose) {
  H5Pset_type_conv_cb(
      dxpl_.get(),
      [](H5T_conv_except_t except, hid_t, hid_t, void*, void*, void* self) -> H5T_conv_ret_t {
        if (except != H5T_CONV_EXCEPT_RANGE_HI && except != H5T_CONV_EXCEPT_RANGE_LOW) return H5T_CONV_UNHANDLED;
        static_cast<CheckedTransfer*>(self)->out_of_range_ = true;
        return H5T_CONV_ABORT;
      },
      this);
}

}  // namespace tensordict::detail::h5
