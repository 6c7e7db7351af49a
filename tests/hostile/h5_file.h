// An h5 file written with the HDF5 C API, for the crafted-file cases.
#pragma once

#include <hdf5.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <vector>

namespace hostile {

// An h5 file built with the C API; closed on destruction.
struct File {
  hid_t id;
  explicit File(const std::filesystem::path& path)
      : id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) {
    REQUIRE(id >= 0);
  }
  ~File() { H5Fclose(id); }

  void floats(const char* name, std::vector<hsize_t> dims) {
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dset = H5Dcreate2(id, name, H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<float> data(n);
    for (hsize_t i = 0; i < n; ++i) data[i] = static_cast<float>(i);
    H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    H5Dclose(dset);
    H5Sclose(space);
  }

  void strings(const char* name, std::vector<const char*> values) {
    const hsize_t n = values.size();
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t dset = H5Dcreate2(id, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(dset);
    H5Tclose(type);
    H5Sclose(space);
  }
};

}  // namespace hostile
