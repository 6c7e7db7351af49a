// Crafted h5 files (written with the HDF5 C API): links out of the file,
// hard-link cycles, NULL dataspaces, huge declared datasets, batch shapes
// that disagree, special files.
#include <hdf5.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "h5_file.h"
#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;
using at::indexing::Slice;

TEST_CASE("hostile h5: a string array shorter than a float dataset's batch sets the batch") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    f.floats("x", {2, 3});
    f.strings("s", {"a", "b"});
  }
  const std::string got = HOSTILE_RETURNS({
    auto ptd = PersistentTensorDict::from_h5(path.string());
    auto flat = ptd.to_tensordict().reshape({-1});
    return std::to_string(ptd.batch_dims()) + " " + std::to_string(flat.batch_size()[0]);
  });
  REQUIRE(got == "1 2");  // the common batch is [2]: the strings span only dim 0
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string(), "r", std::vector<int64_t>{2, 3})),
               Contains("batch size [2, 3] does not match dataset /s of shape [2]"));
}

TEST_CASE("hostile h5: an external link is refused, naming the link") {
  TempDir tmp;
  {
    File other(tmp / "other.h5");
    other.floats("secret", {3});
  }
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    f.floats("x", {3});
    REQUIRE(H5Lcreate_external((tmp / "other.h5").c_str(), "/secret", f.id, "ext", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string()).get("ext")),
               Contains(path.string()) && Contains("/ext is an external link to another file"));
}

TEST_CASE("hostile h5: soft links inside the file are followed, dangling ones are a named error") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    f.floats("x", {3});
    REQUIRE(H5Lcreate_soft("/x", f.id, "alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  const std::string got = HOSTILE_RETURNS(
      return std::to_string(PersistentTensorDict::from_h5(path.string()).get("alias").sum().item<float>()));
  REQUIRE(got == "3.000000");
  {
    File f(tmp / "g.h5");
    f.floats("x", {3});
    REQUIRE(H5Lcreate_soft("/nowhere", f.id, "dangling", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5((tmp / "g.h5").string())),
               Contains("cannot inspect /dangling"));
}

TEST_CASE("hostile h5: a hard-link cycle is refused instead of looping") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    f.floats("x", {3});
    const hid_t g = H5Gcreate2(f.id, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    REQUIRE(H5Lcreate_hard(f.id, "/", f.id, "/g/up", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string())),
               Contains(path.string()) && Contains("the group /g/up is one of its own ancestors (a hard-link cycle)"));
}

TEST_CASE("hostile h5: two links to one group (no cycle) still load") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    const hid_t g = H5Gcreate2(f.id, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    f.floats("/g/x", {3});
    REQUIRE(H5Lcreate_hard(f.id, "/g", f.id, "/h", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  const std::string got = HOSTILE_RETURNS(
      return std::to_string(PersistentTensorDict::from_h5(path.string()).get({"h", "x"}).sum().item<float>()));
  REQUIRE(got == "3.000000");
}

TEST_CASE("hostile h5: a NULL dataspace is a named error, not uninitialised memory") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    const hid_t space = H5Screate(H5S_NULL);
    const hid_t dset = H5Dcreate2(f.id, "empty", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dset);
    H5Sclose(space);
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(path.string()).get("empty")),
               Contains(path.string() + ":/empty has a NULL dataspace"));
}

TEST_CASE("hostile h5: keys, contains, is_empty and repr read no dataset") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    // A tiny file declaring 4 GiB: chunked, nothing written.
    File f(path);
    const hsize_t dims[1] = {hsize_t{1} << 30}, chunk[1] = {1 << 16};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    const hid_t dset = H5Dcreate2(f.id, "big", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dclose(dset);
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  REQUIRE(fs::file_size(path) < 100000);
  const std::string got = HOSTILE_RETURNS({
    const long before = peak_rss_mb();
    auto ptd = PersistentTensorDict::from_h5(path.string());
    const auto keys = ptd.keys();
    const bool has = ptd.contains("big");
    const bool empty = ptd.is_empty();
    const std::string compact = repr(ptd);
    set_printoptions detailed({.compact = false});
    const std::string text = repr(ptd);
    const long grew = peak_rss_mb() - before;
    const bool described = compact.find("big: f32[") != std::string::npos && text.find("big: Tensor(shape=torch.Size([1073741824]), device=cpu, dtype=torch.float32") !=
                           std::string::npos;
    return std::to_string(keys.size()) + (has ? " has" : " missing") + (empty ? " empty" : " not-empty") +
           (described ? " described" : " repr: " + text) +
           (grew < 500 ? " small" : " grew " + std::to_string(grew) + " MiB");
  });
  REQUIRE(got == "1 has not-empty described small");
}

TEST_CASE("hostile h5: index on a two-dim batch (the tour's rollout)") {
  TempDir tmp;
  const fs::path path = tmp / "f.h5";
  {
    File f(path);
    f.floats("obs", {4, 2, 3});
    f.floats("reward", {4, 2});
  }
  const std::string got = HOSTILE_RETURNS({
    auto ptd = PersistentTensorDict::from_h5(path.string());
    auto part = ptd.index({Slice(0, 2)});
    const auto expected = at::arange(24, at::kFloat).reshape({4, 2, 3}).index({Slice(0, 2)});
    return c10::str(part.batch_size()) + (at::equal(part.get("obs"), expected) ? " equal" : " differ");
  });
  REQUIRE(got == "[2, 2] equal");
}

TEST_CASE("hostile h5: a FIFO or a directory as the h5 path is refused without waiting") {
  TempDir tmp;
  REQUIRE(::mkfifo((tmp / "pipe.h5").c_str(), 0600) == 0);
  for (const char* mode : {"r", "r+", "a", "w"}) {
    REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5((tmp / "pipe.h5").string(), mode)),
                 Contains((tmp / "pipe.h5").string()) && Contains("not a regular file"));
  }
  REQUIRE_THAT(HOSTILE_THROWS(PersistentTensorDict::from_h5(tmp.path().string(), "r")), Contains("not a regular file"));
}

TEST_CASE("hostile h5: to_h5 names the real cause and the target when the temporary cannot be created") {
  TempDir tmp;
  const fs::path target = tmp / "missing_dir" / "f.h5";
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({{"x", at::zeros({2})}}, {2}).to_h5(target.string())),
               Contains("cannot write " + target.string()) && Contains("No such file or directory") &&
                   !Contains("not a readable HDF5 file"));
}

TEST_CASE("hostile h5: strings and keys with an embedded NUL are refused, not truncated") {
  TempDir tmp;
  TensorDict td({}, {});
  td.set_non_tensor("s", std::string("ab\0cd", 5));
  REQUIRE_THAT(HOSTILE_THROWS(td.to_h5((tmp / "f.h5").string())),
               Contains(":/s") && Contains("holds a NUL character, which an HDF5 string cannot store"));
  TensorDict keyed({}, {});
  keyed.set(std::string("a\0b", 3), at::zeros({1}));
  REQUIRE_THAT(HOSTILE_THROWS(keyed.to_h5((tmp / "g.h5").string())),
               Contains("cannot store key 'a\\0b'") && Contains("HDF5 names cannot be empty") && Contains("NUL character"));
  REQUIRE_FALSE(fs::exists(tmp / "f.h5"));
}
