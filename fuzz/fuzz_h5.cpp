// Fuzzes the h5 loader (PersistentTensorDict::from_h5 + reads). The input
// drives an HDF5 writer (the C API) that builds arbitrary but well-formed
// files: nested groups, datasets of every HDF5 type class our reader meets in
// h5py files and some it does not (enums, compounds, strings, arrays, opaque,
// bitfields, odd sizes), scalar, null and simple dataspaces, chunking and
// gzip, raw data stored in another file and virtual datasets mapping one. Loading, reading every leaf, hyperslab reads and to_tensordict must
// succeed or throw a std::exception.
//
// Malformed container bytes are libhdf5's own parser (an uninstrumented
// Debian library); this target exercises the runtime's mapping of whatever a
// valid file may hold.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tensordict/persistent.h"
#include "fuzz_bytes.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;

hid_t H5T_IEEE_F16LE_fallback();

namespace {

using fuzz::Bytes;

const fs::path& file_path() {
  static const fs::path p = [] {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    return base / ("tc_fuzz_h5." + std::to_string(::getpid()) + ".h5");
  }();
  return p;
}

// A file beside the fuzzed one that external storage and virtual datasets
// point to; never read.
const fs::path& outside_path() {
  static const fs::path p = file_path().string() + ".outside";
  return p;
}

hid_t make_type(Bytes& in) {
  switch (in.next() % 16) {
    case 0: return H5Tcopy(H5T_NATIVE_INT8);
    case 1: return H5Tcopy(H5T_NATIVE_UINT8);
    case 2: return H5Tcopy(H5T_STD_I16BE);
    case 3: return H5Tcopy(H5T_NATIVE_UINT16);
    case 4: return H5Tcopy(H5T_NATIVE_INT32);
    case 5: return H5Tcopy(H5T_NATIVE_UINT32);
    case 6: return H5Tcopy(H5T_NATIVE_INT64);
    case 7: return H5Tcopy(H5T_NATIVE_UINT64);
    case 8: return H5Tcopy(H5T_IEEE_F16LE_fallback());
    case 9: return H5Tcopy(H5T_NATIVE_FLOAT);
    case 10: return H5Tcopy(H5T_IEEE_F64BE);
    case 11: {  // h5py's bool, or another enum
      hid_t base = in.next() & 1 ? H5T_NATIVE_INT8 : (in.next() & 1 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT8);
      hid_t t = H5Tenum_create(base);
      if (in.next() & 1) {
        // Values in the base type's memory layout (little-endian, <= 8 bytes).
        std::uint64_t f = 0, tr = 1;
        H5Tenum_insert(t, "FALSE", &f);
        H5Tenum_insert(t, "TRUE", &tr);
      } else {
        std::uint64_t a = static_cast<std::uint64_t>(in.small(0, 5));
        H5Tenum_insert(t, "A", &a);
      }
      return t;
    }
    case 12: {  // complex (r, i) or another compound
      const bool dbl = in.next() & 1;
      const hid_t part = dbl ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
      const std::size_t ps = dbl ? 8 : 4;
      const int fields = in.small(1, 3);
      hid_t t = H5Tcreate(H5T_COMPOUND, ps * static_cast<std::size_t>(fields));
      const char* names[] = {"r", "i", "x"};
      const bool odd = in.next() % 4 == 0;
      for (int k = 0; k < fields; ++k) {
        H5Tinsert(t, odd && k == 1 ? "j" : names[k], ps * static_cast<std::size_t>(k), k == 2 ? H5T_NATIVE_INT32 : part);
      }
      return t;
    }
    case 13: {  // strings: variable or fixed length
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, in.next() & 1 ? H5T_VARIABLE : static_cast<std::size_t>(in.small(1, 8)));
      H5Tset_cset(t, in.next() & 1 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
      return t;
    }
    case 14: {  // array of ints
      hsize_t d = static_cast<hsize_t>(in.small(1, 3));
      return H5Tarray_create2(H5T_NATIVE_INT32, 1, &d);
    }
    default: {  // opaque or bitfield
      if (in.next() & 1) {
        hid_t t = H5Tcreate(H5T_OPAQUE, static_cast<std::size_t>(in.small(1, 4)));
        H5Tset_tag(t, "blob");
        return t;
      }
      return H5Tcopy(H5T_NATIVE_B16);
    }
  }
}

void add_dataset(hid_t loc, const std::string& name, Bytes& in) {
  hid_t type = make_type(in);
  if (type < 0) return;
  const int kind = in.next() % 8;
  hid_t space;
  std::vector<hsize_t> dims;
  if (kind == 0) {
    space = H5Screate(H5S_SCALAR);
  } else if (kind == 1) {
    space = H5Screate(H5S_NULL);
  } else {
    dims.resize(static_cast<std::size_t>(in.small(1, 4)));
    for (auto& d : dims) d = static_cast<hsize_t>(in.small(0, 4));
    space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  }
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const auto storage = in.next() % 16;
  if (storage == 0 && kind > 1) {
    // Raw data in a file outside (refused: nothing may be read from it).
    H5Pset_external(dcpl, outside_path().c_str(), 0, H5F_UNLIMITED);
  } else if (storage == 1 && kind > 1) {
    // A virtual dataset mapping another file's dataset (refused likewise).
    H5Pset_virtual(dcpl, space, outside_path().c_str(), "/secret", space);
  } else if (!dims.empty() && in.next() % 4 == 0) {
    std::vector<hsize_t> chunk(dims.size());
    for (std::size_t k = 0; k < dims.size(); ++k) chunk[k] = dims[k] == 0 ? 1 : dims[k];
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    if (in.next() & 1) H5Pset_deflate(dcpl, 1);
  }
  hid_t ds = H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds >= 0) {
    hssize_t n = H5Sget_simple_extent_npoints(space);
    const std::size_t tsize = H5Tget_size(type);
    if (n > 0 && H5Tis_variable_str(type) > 0) {
      std::vector<std::string> strs(static_cast<std::size_t>(n));
      std::vector<const char*> ptrs;
      for (auto& s : strs) {
        const int len = in.small(0, 6);
        for (int k = 0; k < len; ++k) s += static_cast<char>(in.small(1, 255));
        ptrs.push_back(s.c_str());
      }
      H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data());
    } else if (n > 0 && tsize > 0) {
      std::vector<std::uint8_t> buf(static_cast<std::size_t>(n) * tsize);
      for (auto& b : buf) b = in.next();
      H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    }
    H5Dclose(ds);
  }
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(type);
}

void build(hid_t loc, Bytes& in, int depth) {
  const int entries = in.small(0, 4);
  for (int k = 0; k < entries; ++k) {
    std::string name(1, static_cast<char>('a' + in.small(0, 5)));
    if (in.next() % 16 == 0) name = "sh ape";
    if (H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0) continue;
    if (depth < 3 && in.next() % 4 == 0) {
      hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (g >= 0) {
        build(g, in, depth + 1);
        H5Gclose(g);
      }
    } else {
      add_dataset(loc, name, in);
    }
  }
}

void touch(const at::Tensor& t) {
  if (t.numel() == 0) return;
  volatile int64_t sink = t.contiguous().view({-1}).view(at::kByte).sum().item<int64_t>();
  (void)sink;
}

}  // namespace

// Half floats: H5T_NATIVE_FLOAT16 does not exist in HDF5 1.10; build one.
hid_t H5T_IEEE_F16LE_fallback() {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return t;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool init = [] {
    at::set_num_threads(1);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // no HDF5 error stack printing
    std::atexit([] { std::remove(file_path().c_str()); });
    return true;
  }();
  (void)init;
  Bytes in{data, size};
  {
    hid_t f = H5Fcreate(file_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) std::abort();
    build(f, in, 0);
    H5Fclose(f);
  }
  try {
    auto ptd = tensordict::PersistentTensorDict::from_h5(file_path().string());
    std::ostringstream os;
    os << ptd;
    for (const auto& key : ptd.keys({.include_nested = true, .leaves_only = true})) {
      try {
        touch(ptd.get(key));
      } catch (const std::exception&) {
      }
    }
    if (!ptd.batch_size().empty() && ptd.batch_size()[0] > 0) {
      const int64_t n = ptd.batch_size()[0];
      auto first = ptd.index({at::indexing::Slice(0, n, 1 + (in.next() % 2))});
      (void)first;
      auto one = ptd.index({n - 1});
      (void)one;
    }
    auto dense = ptd.to_tensordict();
    (void)dense;
  } catch (const std::exception& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  return 0;
}
