// h5: datasets of every kind numpy/h5py writes, created with the HDF5 C API.
#include <hdf5.h>
#include <nlohmann/json.hpp>
#include <tensordict/persistent.h>

#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

// Writes a dataset of `dims` with file type `ftype` from `data` in memory type `mtype`.
void put(hid_t file, const char* name, hid_t ftype, hid_t mtype, std::vector<hsize_t> dims, const void* data) {
  hid_t space =
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t dset = H5Dcreate2(file, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(dset >= 0);
  REQUIRE(H5Dwrite(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
}

}  // namespace

TEST_CASE("h5 reads unsigned, big-endian, complex, enum and string datasets as h5py writes them") {
  TempDir tmp;
  const std::string path = tmp / "types.h5";
  {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const uint16_t u16[3] = {1, 2, 65535};
    put(f, "u16", H5T_STD_U16LE, H5T_NATIVE_UINT16, {3}, u16);
    const uint32_t u32[3] = {4000000000u, 0, 7};
    put(f, "u32", H5T_STD_U32LE, H5T_NATIVE_UINT32, {3}, u32);
    const uint64_t u64[3] = {5, 6, 7};
    put(f, "u64", H5T_STD_U64LE, H5T_NATIVE_UINT64, {3}, u64);
    const int32_t i32[3] = {-1, 2, 300000};
    put(f, "i32be", H5T_STD_I32BE, H5T_NATIVE_INT32, {3}, i32);  // numpy '>i4'
    const double f64[3] = {0.5, -2.0, 1e300};
    put(f, "f64be", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, {3}, f64);

    hid_t c64 = H5Tcreate(H5T_COMPOUND, 8);  // h5py's complex64
    H5Tinsert(c64, "r", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(c64, "i", 4, H5T_NATIVE_FLOAT);
    const float c[6] = {1, 2, 3, 4, 5, 6};
    put(f, "c64", c64, c64, {3}, c);
    H5Tclose(c64);

    hid_t b = H5Tenum_create(H5T_NATIVE_INT8);  // h5py's bool
    int8_t no = 0, yes = 1;
    H5Tenum_insert(b, "FALSE", &no);
    H5Tenum_insert(b, "TRUE", &yes);
    const int8_t flags[3] = {1, 0, 1};
    put(f, "flags", b, b, {3}, flags);
    H5Tclose(b);

    hid_t e = H5Tenum_create(H5T_NATIVE_INT16);  // another enum: its integer values
    int16_t a = 0, z = 5;
    H5Tenum_insert(e, "A", &a);
    H5Tenum_insert(e, "Z", &z);
    const int16_t codes[3] = {5, 0, 5};
    put(f, "codes", e, e, {3}, codes);
    H5Tclose(e);

    hid_t fixed = H5Tcopy(H5T_C_S1);  // numpy bytes 'S5'
    H5Tset_size(fixed, 5);
    put(f, "fixed", fixed, fixed, {}, "abc\0\0");
    H5Tclose(fixed);

    hid_t vlen = H5Tcopy(H5T_C_S1);  // h5py str
    H5Tset_size(vlen, H5T_VARIABLE);
    H5Tset_cset(vlen, H5T_CSET_UTF8);
    const char* words[3] = {"x", "yy", "zzz"};
    put(f, "words", vlen, vlen, {3}, words);
    H5Tclose(vlen);

    H5Fclose(f);
  }
  PersistentTensorDict td = PersistentTensorDict::from_h5(path);
  REQUIRE(td.batch_size() == at::IntArrayRef{3});
  REQUIRE(td.get("u16").scalar_type() == at::kInt);
  REQUIRE(at::equal(td.get("u16"), at::tensor({1, 2, 65535}, at::kInt)));
  REQUIRE(td.get("u32").scalar_type() == at::kLong);
  REQUIRE(td.get("u32")[0].item<int64_t>() == 4000000000);
  REQUIRE(at::equal(td.get("u64"), at::tensor({5, 6, 7}, at::kLong)));
  REQUIRE(at::equal(td.get("i32be"), at::tensor({-1, 2, 300000}, at::kInt)));
  REQUIRE(at::equal(td.get("f64be"), at::tensor({0.5, -2.0, 1e300}, at::kDouble)));
  REQUIRE(td.get("c64").scalar_type() == at::kComplexFloat);
  REQUIRE(at::equal(at::view_as_real(td.get("c64")).reshape({-1}), at::arange(1, 7, at::kFloat)));
  REQUIRE(at::equal(td.get("flags"), mask({1, 0, 1})));
  REQUIRE(at::equal(td.get("codes"), at::tensor({5, 0, 5}, at::kShort)));
  REQUIRE(td.get_non_tensor("fixed") == "abc");
  REQUIRE(td.get_non_tensor("words") == Json::array({"x", "yy", "zzz"}));
  REQUIRE(at::equal(td.get_at("u16", {at::indexing::Slice(1, 3)}), at::tensor({2, 65535}, at::kInt)));
}

TEST_CASE("h5 refuses a dataset type it cannot map, naming the dataset") {
  TempDir tmp;
  const std::string path = tmp / "bits.h5";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const uint8_t bits[2] = {1, 2};
  put(f, "bits", H5T_STD_B8LE, H5T_NATIVE_B8, {2}, bits);
  H5Fclose(f);
  PersistentTensorDict td = PersistentTensorDict::from_h5(path);  // shapes only: opening works
  REQUIRE_THAT(TD_MESSAGE(td.get("bits")), Contains("bits.h5:/bits") && Contains("no tensor dtype"));
}

// Found by fuzz_h5: a string array whose shape does not start with its
// group's batch size (string datasets took no part in batch inference) was
// indexed with the batch index, viewing memory outside its ids tensor. String
// arrays now take part in the inference, and a given batch size must suit them.
TEST_CASE("indexing an h5 file whose string array disagrees with the batch size is refused clearly") {
  TempDir tmp;
  const std::string path = tmp / "strings.h5";
  {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const int32_t x[4] = {1, 2, 3, 4};
    put(f, "x", H5T_STD_I32LE, H5T_NATIVE_INT32, {4}, x);
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    H5Tset_cset(str, H5T_CSET_UTF8);
    const char* words[2] = {"a", "b"};
    put(f, "s", str, str, {2}, words);
    put(f, "empty", str, str, {0}, words);
    H5Tclose(str);
    H5Fclose(f);
  }
  PersistentTensorDict td = PersistentTensorDict::from_h5(path);
  REQUIRE(td.batch_size().empty());  // [4], [2] and [0] share no leading dim
  REQUIRE(at::equal(td.get("x"), at::tensor({1, 2, 3, 4}, at::kInt)));
  REQUIRE_THAT(TD_MESSAGE(PersistentTensorDict::from_h5(path, "r", std::vector<int64_t>{4})),
               Contains("strings.h5") && Contains("batch size [4] does not match dataset /empty of shape [0]"));
}

TEST_CASE("h5 strings carry tensordict's marks: __tensordict_str__ on one string, __tensordict_stack__ on a stack") {
  // Python tensordict reads an unmarked array of strings as one NonTensorData
  // holding a list, not as a NonTensorStack.
  TempDir tmp;
  TensorDict td({{"x", at::zeros({2, 3})}}, {2, 3});
  td.set_non_tensor("text", "hello");
  td.set("stack", Value(NonTensorData::stack({"a", "b", "c", "d", "e", "f"}, {2, 3})));
  const std::string path = (tmp.path() / "marked.h5").string();
  td.to_h5(path).close();

  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  // One string: a scalar attribute of h5py's bool (an int8 enum), TRUE.
  hid_t attr = H5Aopen_by_name(file, "text", "__tensordict_str__", H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  hid_t type = H5Aget_type(attr);
  REQUIRE(H5Tget_class(type) == H5T_ENUM);
  int8_t flag = 0;
  REQUIRE(H5Aread(attr, H5T_NATIVE_INT8, &flag) >= 0);
  REQUIRE(flag == 1);
  H5Tclose(type);
  H5Aclose(attr);
  REQUIRE(H5Aexists_by_name(file, "text", "__tensordict_stack__", H5P_DEFAULT) == 0);
  // A stack: its shape, as int64.
  attr = H5Aopen_by_name(file, "stack", "__tensordict_stack__", H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  hid_t space = H5Aget_space(attr);
  REQUIRE(H5Sget_simple_extent_npoints(space) == 2);
  int64_t shape[2] = {0, 0};
  REQUIRE(H5Aread(attr, H5T_NATIVE_INT64, shape) >= 0);
  REQUIRE(shape[0] == 2);
  REQUIRE(shape[1] == 3);
  H5Sclose(space);
  H5Aclose(attr);
  REQUIRE(H5Aexists_by_name(file, "stack", "__tensordict_str__", H5P_DEFAULT) == 0);
  REQUIRE(H5Aexists_by_name(file, "x", "__tensordict_str__", H5P_DEFAULT) == 0);
  H5Fclose(file);

  // Our reader takes the marked file as before.
  TensorDict back = PersistentTensorDict::from_h5(path).to_tensordict();
  REQUIRE(back.get_non_tensor("text") == "hello");
  REQUIRE(back.get_non_tensor("stack") == Json::array({Json::array({"a", "b", "c"}), Json::array({"d", "e", "f"})}));
}
