// NonTensorStacks as files hold them: reading large stacks in linear time,
// and writers that refuse what their own reader (or h5py) would refuse.
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include "../message_of.h"
#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;

namespace {

// A tensordict of batch [n] whose key "s" holds a NonTensorStack of n
// distinct strings.
TensorDict stack_of(int64_t n) {
  std::vector<Json> values;
  values.reserve(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) values.emplace_back("v" + std::to_string(i));
  TensorDict td({}, {n});
  td.set("s", Value(NonTensorData::stack(std::move(values), {n})));
  return td;
}

}  // namespace

TEST_CASE("hostile non-tensor: a consolidated NonTensorStack of 100k members reads in linear time") {
  // The members were found one by one with ordered_json's linear key search:
  // 100k members took 14.6 s, 200k 64 s (init_remote's metadata, read by the
  // same code, 95 s).
  TempDir tmp;
  const fs::path small = tmp / "small.td", large = tmp / "large.td";
  const std::string got = HOSTILE_RETURNS({
    // Written in the child: a parent that ran a parallel op leaves the child
    // an OpenMP pool it cannot use (libgomp is not fork-safe).
    stack_of(25000).consolidate({.filename = small.string()});
    stack_of(100000).consolidate({.filename = large.string()});
    std::string members;
    const double t_small = seconds_of([&] { (void)from_consolidated(small.string()); });
    const double t_large = seconds_of([&] {
      const TensorDict td = from_consolidated(large.string());
      members = td.get_non_tensor("s")[99999].get<std::string>();
    });
    // The issue's target: 100k members in under 1 s (quadratic: 14.6 s).
    // A bound of 3 s, not a ratio to the small read: on a loaded machine a
    // 20 ms read against a 270 ms one swings past any ratio linear time
    // allows.
    return members + (t_large < 3 ? " linear"
                                  : " " + std::to_string(t_large) + " s (25k: " + std::to_string(t_small) + " s)");
  });
  REQUIRE(got == "v99999 linear");
}

TEST_CASE("hostile non-tensor: memmap refuses a meta.json larger than load_memmap reads, naming key and file") {
  // Three strings of 90 MiB: a 270 MiB meta.json, which load_memmap refuses
  // (256 MiB at most); it was written, then could not be read back.
  TempDir tmp;
  const fs::path dir = tmp / "t";
  const std::size_t length = std::size_t{90} << 20;
  // The strings and their JSON need more than the default address-space
  // limit where libtorch's CUDA libraries are mapped too.
  const Outcome outcome = in_child([&]() -> std::string {
    TensorDict td({}, {3});
    td.set("s", Value(NonTensorData::stack({std::string(length, 'a'), std::string(length, 'b'),
                                            std::string(length, 'c')},
                                           {3})));
    const std::string message = td_test::message_of([&] { td.memmap(dir.string()); });
    const std::size_t bytes =
        std::string(R"({"_type":"<class 'tensordict.tensorclass.NonTensorStack'>","stack_dim":0,"device":null,"data":[)")
            .size() +
        3 * (length + 2) + 2 + 2;
    const std::string expected = "cannot write " + (dir / "s" / "meta.json").string() +
                                 ": the value of key 's' makes it " + std::to_string(bytes) +
                                 " bytes, more than the 268435456 a meta.json may have to load again; store large "
                                 "data in a tensor";
    return (message == expected ? std::string("refused") : message) + (fs::exists(dir) ? " written" : "");
  }, Limits{.memory_mb = 8192});
  INFO(outcome.describe());
  REQUIRE(outcome.status == Outcome::Status::Returned);
  CHECK(outcome.text == "refused");
}

TEST_CASE("hostile non-tensor: memmap refuses a string that is not UTF-8 with a message naming key and file") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict td({}, {2});
  td.set("s", Value(NonTensorData::stack({std::string("ok"), std::string("a\xff\xfe")}, {2})));
  REQUIRE(td_test::message_of([&] { td.memmap(dir.string()); }) ==
          "cannot write " + (dir / "s" / "meta.json").string() +
              ": the value of key 's' holds a string that is not valid UTF-8, which JSON cannot store; store bytes in "
              "a uint8 tensor");
  REQUIRE_FALSE(fs::exists(dir));
  // A single value, and a key, the same way.
  TensorDict one({}, {});
  one.set_non_tensor({"n", "v"}, std::string("\xc0\x80"));
  REQUIRE(td_test::message_of([&] { one.memmap(dir.string()); }) ==
          "cannot write " + (dir / "n" / "v" / "meta.json").string() +
              ": the value of key ('n', 'v') holds a string that is not valid UTF-8, which JSON cannot store; store "
              "bytes in a uint8 tensor");
}

TEST_CASE("hostile non-tensor: to_h5 refuses a string that is not UTF-8, naming the file and key") {
  // The dataset's strings are declared UTF-8: h5py and tensordict failed to
  // read back what was written.
  TempDir tmp;
  const fs::path file = tmp / "f.h5";
  TensorDict td({}, {2});
  td.set("s", Value(NonTensorData::stack({std::string("ok"), std::string("ab\xed\xa0\x80")}, {2})));
  REQUIRE(td_test::message_of([&] { td.to_h5(file.string()); }) ==
          "cannot write " + file.string() +
              ":/s: the string holds bytes that are not valid UTF-8 (byte 2 of it), which an HDF5 UTF-8 string cannot "
              "store; store bytes in a uint8 tensor");
  REQUIRE_FALSE(fs::exists(file));
}
