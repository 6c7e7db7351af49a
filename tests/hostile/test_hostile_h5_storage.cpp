// Crafted h5 files whose data lies elsewhere or decodes to far more than
// they hold: external raw storage, virtual datasets, filters this HDF5 lacks,
// huge chunks, sparse datasets, uint64 values past int64.
#include <hdf5.h>

#include "h5_file.h"
#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;

namespace {

// Creates dataset `name` of `type` and `dims` with the creation properties
// `dcpl`, writing `data` when given.
void dataset(hid_t file, const char* name, hid_t type, std::vector<hsize_t> dims, hid_t dcpl,
             const void* data = nullptr) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(dset >= 0);
  if (data) REQUIRE(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
}

// Dataset creation properties, closed on destruction.
struct Dcpl {
  hid_t id = H5Pcreate(H5P_DATASET_CREATE);
  ~Dcpl() { H5Pclose(id); }
};

}  // namespace

TEST_CASE("hostile h5: external raw storage is refused, and the outside file is neither read nor written") {
  TempDir tmp;
  const fs::path outside = tmp / "outside.bin";
  write_text(outside, std::string(16, 'S'));
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    Dcpl dcpl;
    REQUIRE(H5Pset_external(dcpl.id, outside.c_str(), 0, 16) >= 0);
    dataset(f.id, "x", H5T_NATIVE_FLOAT, {4}, dcpl.id);
  }
  for (const char* mode : {"r", "r+"}) {
    REQUIRE_THAT(HOSTILE_THROWS({
                   auto ptd = PersistentTensorDict::from_h5(path.string(), mode);
                   ptd.get("x");
                 }),
                 Contains(path.string() + ":/x keeps its data in external files (H5Pset_external)"));
  }
  REQUIRE(read_text(outside) == std::string(16, 'S'));
}

TEST_CASE("hostile h5: a virtual dataset mapping another file is refused") {
  TempDir tmp;
  const fs::path other = tmp / "other.h5";
  {
    File f(other);
    const float secret[3] = {1, 2, 3};
    dataset(f.id, "secret", H5T_NATIVE_FLOAT, {3}, H5P_DEFAULT, secret);
  }
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    Dcpl dcpl;
    const hsize_t n = 3;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    REQUIRE(H5Pset_virtual(dcpl.id, space, other.c_str(), "/secret", space) >= 0);
    dataset(f.id, "x", H5T_NATIVE_FLOAT, {3}, dcpl.id);
    H5Sclose(space);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string()).get("x")),
               Contains(path.string() + ":/x is a virtual dataset (its data lies in other files)"));
}

TEST_CASE("hostile h5: a uint64 past int64's range is refused, not saturated") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    const uint64_t fits[2] = {7, uint64_t{1} << 62};
    dataset(f.id, "fits", H5T_NATIVE_UINT64, {2}, H5P_DEFAULT, fits);
    const uint64_t past[2] = {7, ~uint64_t{0}};
    dataset(f.id, "past", H5T_NATIVE_UINT64, {2}, H5P_DEFAULT, past);
  }
  const std::string fits = HOSTILE_RETURNS(return c10::str(PersistentTensorDict::from_h5(path.string()).get("fits")[1].item<int64_t>()));
  REQUIRE(fits == std::to_string(int64_t{1} << 62));
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string()).get("past")),
               Contains("cannot read dataset " + path.string() + ":/past: a value lies outside the range of Long"));
  // Writing a negative value into a uint64 dataset is refused the same way.
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string(), "r+").set_("fits", at::full({2}, -1, at::kLong))),
               Contains("cannot write dataset " + path.string() + ":/fits: a value lies outside the range of its type"));
}

TEST_CASE("hostile h5: a filter this HDF5 lacks is named") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  // A filter registered only while the file is written.
  constexpr H5Z_filter_t kFilter = 32321;
  const H5Z_class2_t filter{H5Z_CLASS_T_VERS, kFilter, 1, 1, "made-up-codec", nullptr, nullptr,
                            [](unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) { return nbytes; }};
  REQUIRE(H5Zregister(&filter) >= 0);
  {
    File f(path);
    Dcpl dcpl;
    const hsize_t chunk = 4;
    H5Pset_chunk(dcpl.id, 1, &chunk);
    REQUIRE(H5Pset_filter(dcpl.id, kFilter, H5Z_FLAG_MANDATORY, 0, nullptr) >= 0);
    const float data[4] = {1, 2, 3, 4};
    dataset(f.id, "x", H5T_NATIVE_FLOAT, {4}, dcpl.id, data);
  }
  REQUIRE(H5Zunregister(kFilter) >= 0);
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string()).get("x")),
               Contains(path.string() + ":/x is compressed with HDF5 filter 32321 (\"made-up-codec\"), which this HDF5 "
                                        "library does not have"));
}

TEST_CASE("hostile h5: huge chunks and sparse datasets are refused before allocating") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    {
      Dcpl dcpl;  // one 512 MiB chunk, nothing stored
      const hsize_t chunk[2] = {1 << 20, 128};
      H5Pset_chunk(dcpl.id, 2, chunk);
      dataset(f.id, "chunky", H5T_NATIVE_FLOAT, {1 << 20, 128}, dcpl.id);
    }
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string())),
               Contains(path.string() + ":/chunky has chunks of 1048576x128 elements, over 256 MiB each"));
  const fs::path sparse = tmp / "sparse.h5";
  {
    File f(sparse);
    Dcpl dcpl;  // 4 rows of 4 GiB declared, 256 KiB chunks, nothing stored
    const hsize_t chunk[2] = {1, 1 << 16};
    H5Pset_chunk(dcpl.id, 2, chunk);
    dataset(f.id, "x", H5T_NATIVE_FLOAT, {4, hsize_t{1} << 30}, dcpl.id);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(sparse.string()).index({0}).get("x")),
               Contains(sparse.string() + ":/x: reading 4294967296 bytes of it would allocate more than 1024 times the 0 "
                                          "bytes the file stores for it"));
  // A declared element count past what int64 holds (2^80) is named, not wrapped.
  const fs::path vast = tmp / "vast.h5";
  {
    File f(vast);
    Dcpl dcpl;
    const hsize_t chunk[2] = {1, 1 << 16};
    H5Pset_chunk(dcpl.id, 2, chunk);
    dataset(f.id, "x", H5T_NATIVE_FLOAT, {hsize_t{1} << 40, hsize_t{1} << 40}, dcpl.id);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(vast.string()).get("x")),
               Contains(vast.string() + ":/x: its shape [1099511627776, 1099511627776] has more elements than can be "
                                        "read"));
  // A slice within the bound reads (the fill value).
  const std::string small = HOSTILE_RETURNS({
    auto ptd = PersistentTensorDict::from_h5(sparse.string());
    return c10::str(ptd.get_at("x", {0, at::indexing::Slice(0, 4)}).sum().item<float>());
  });
  REQUIRE(small == "0");
}
