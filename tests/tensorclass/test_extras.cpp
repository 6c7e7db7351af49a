// The rest of tensordict's tensorclass surface on generated classes: entries
// at a batch index, index_put_ with a TensorDict, all/any along a dim,
// repeat, tensor_split, memmap_like, dicts, replace, the batch size setter
// and the buffer methods. Expected values are the per-tensor computation on
// the same data (or tensordict 0.15.3's, where said).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <vector>

#include "../builders.h"
#include "../message_of.h"
#include "../temp_dir.h"
#include "tc_extras.tc.h"

using tct::extras::Data;
using tct::extras::Flags;
using tct::extras::Meta;
using tct::extras::Nest;
using tensordict::TensorDict;
using namespace at::indexing;
using td_test::message_of;
using td_test::same;

namespace {

// test_tensorclass.py's MyDataNested(X=..., y=MyDataNested(X=...), z=...).
Data data(int64_t n = 3, int64_t m = 4) {
  const at::Tensor x = at::arange(n * m * 5, at::kFloat).view({n, m, 5});
  Nest nest({.X = -x.clone(), .z = "nested"}, {n, m});
  return Data({.X = x, .z = "test_tensorclass", .y = nest}, {n, m});
}

}  // namespace

TEST_CASE("get_at and set_at_ on fields and nested fields (test_tensorclass.py::TestTensorClass::test_tensorclass_get_at)",
          "[tensorclass][extras]") {
  Data d = data();
  CHECK(same(d.get_at("X", {Slice(2, 3)}), d.X.index({Slice(2, 3)})));
  CHECK(same(d.get_at({"y", "X"}, {Slice(2, 3)}), d.y->X.index({Slice(2, 3)})));
  CHECK(same(d.get_at("X", {1, 2}), d.X.index({1, 2})));
  CHECK_THROWS_WITH(d.get_at("foo", {0}), Catch::Matchers::Contains("foo"));
}

TEST_CASE("set_at_ writes in place at a batch index (test_tensorclass.py::TestTensorClass::test_tensorclass_set_at_)",
          "[tensorclass][extras]") {
  Data d = data();
  const at::Tensor x = d.X;  // the same tensor: set_at_ writes into it
  const at::Tensor before = x.clone();
  d.set_at_("X", at::full({1, 4, 5}, 5.f), {Slice(2, 3)});
  d.set_at_({"y", "X"}, 7, {0, 1});  // a scalar fills the slice
  CHECK((d.get_at("X", {Slice(2, 3)}) == 5).all().item<bool>());
  CHECK(same(x.index({Slice(0, 2)}), before.index({Slice(0, 2)})));
  CHECK((d.y->X.index({0, 1}) == 7).all().item<bool>());
  CHECK(d.y->X.index({0, 0, 1}).item<float>() == -1.f);
  CHECK_THROWS_WITH(d.set_at_("X", at::ones({2, 5}), {0}), Catch::Matchers::Contains("shape"));
}

TEST_CASE("obj[index] = a TensorDict writes each entry into its field (test_tensorclass.py::TestTensorClass::test_setitem)",
          "[tensorclass][extras]") {
  Data d = data();
  const at::Tensor x = d.X;
  TensorDict row({{"X", at::full({4, 5}, 9.f)}, {"y", TensorDict({{"X", at::zeros({4, 5})}}, {4})}}, {4});
  d.index_put_({1}, row);
  at::Tensor expected = at::arange(60, at::kFloat).view({3, 4, 5});
  expected.index_put_({1}, 9.f);
  CHECK(same(x, expected));  // in place: the field's tensor is the same
  CHECK((d.y->X.index({1}) == 0).all().item<bool>());
  CHECK((d.y->X.index({0}) != 0).any().item<bool>());

  // A key that is no set tensor field: nothing is written.
  const at::Tensor snapshot = d.X.clone();
  TensorDict bad({{"X", at::ones({4, 5})}, {"k", at::ones({4})}}, {4});
  CHECK(message_of([&] { d.index_put_({0}, bad); }) ==
        "Data.index_put_: key 'k' is not a set tensor field of Data");
  CHECK(same(d.X, snapshot));
  TensorDict unknown({{"nope", at::ones({4})}}, {4});
  CHECK_THROWS_AS(d.index_put_({0}, unknown), tensordict::KeyError);
}

TEST_CASE("all and any along a batch dim give a TensorDict of bools (test_tensorclass.py::TestTensorClass::test_all_any)",
          "[tensorclass][extras]") {
  const Flags f({.m = td_test::mask({1, 1, 0, 1, 1, 1}).view({3, 1, 2})}, {3, 1});
  CHECK_FALSE(f.all());
  CHECK(f.any());
  for (const int64_t dim : {0, 1, -1, -2}) {
    const TensorDict all = f.all(dim);
    const TensorDict any = f.any(dim);
    CHECK(same(all.get("m"), f.m.all(dim < 0 ? dim - 1 : dim)));
    CHECK(same(any.get("m"), f.m.any(dim < 0 ? dim - 1 : dim)));
    CHECK(all.batch_dims() == 1);
  }
  CHECK_THROWS_AS(f.all(2), tensordict::IndexError);
}

TEST_CASE("repeat and repeat_interleave of a nested class (test_tensorclass.py::TestTensorClass::test_repeat)",
          "[tensorclass][extras]") {
  const Data d = data();
  const Data r = d.repeat({2, 3});
  CHECK(r.batch_size() == at::IntArrayRef({6, 12}));
  CHECK(same(r.X, d.X.repeat({2, 3, 1})));
  CHECK(same(r.y->X, d.y->X.repeat({2, 3, 1})));
  CHECK(r.z == "test_tensorclass");
  CHECK(r.y->z == "nested");
  // Same as cat([cat([d] * 2, 0)] * 3, 1), the Python test's check.
  const Data c = Data::cat({Data::cat({d, d}, 0), Data::cat({d, d}, 0), Data::cat({d, d}, 0)}, 1);
  CHECK(same(r.X, c.X));
}

TEST_CASE("repeat_interleave with a count and a tensor of counts "
          "(test_tensorclass.py::TestTensorClass::test_repeat_interleave_tensor)",
          "[tensorclass][extras]") {
  const Data d = data();
  CHECK(d.repeat_interleave(2, 1).batch_size() == at::IntArrayRef({3, 8}));
  const at::Tensor counts = at::tensor({2, 3, 4, 5}, at::kLong);
  const Data r = d.repeat_interleave(counts, 1);
  CHECK(r.batch_size() == at::IntArrayRef({3, 14}));
  CHECK(same(r.X, d.X.repeat_interleave(counts, 1)));
  CHECK(same(r.y->X, d.y->X.repeat_interleave(counts, 1)));
}

TEST_CASE("tensor_split by indices and by sections (test_tensorclass.py::TestTensorClass::test_tensor_split)",
          "[tensorclass][extras]") {
  const Data d = data(3, 6);
  const std::vector<Data> by_index = d.tensor_split(at::IntArrayRef({1, 4, 5}), 1);
  REQUIRE(by_index.size() == 4);
  CHECK(by_index[0].batch_size() == at::IntArrayRef({3, 1}));
  CHECK(by_index[1].batch_size() == at::IntArrayRef({3, 3}));
  CHECK(by_index[2].batch_size() == at::IntArrayRef({3, 1}));
  CHECK(by_index[3].batch_size() == at::IntArrayRef({3, 1}));
  CHECK(same(by_index[1].y->X, d.y->X.index({Slice(), Slice(1, 4)})));
  const std::vector<Data> sections = d.tensor_split(4, 1);
  REQUIRE(sections.size() == 4);
  const auto expected = d.X.tensor_split(4, 1);
  for (std::size_t i = 0; i < sections.size(); ++i) CHECK(same(sections[i].X, expected[i]));
  CHECK(sections[3].z == "test_tensorclass");
}

TEST_CASE("memmap_like writes zero-filled files of the fields' shapes (test_tensorclass.py::TestMemmap::test_memmap_like)",
          "[tensorclass][extras][memmap]") {
  const Data d = data();
  const td_test::TempDir dir;
  const Data like = d.memmap_like((dir / "like").string());
  CHECK(like.is_memmap());
  CHECK(like.is_locked());
  CHECK(same(like.X, at::zeros_like(d.X)));
  CHECK(same(like.y->X, at::zeros_like(d.y->X)));
  CHECK(like.z == "test_tensorclass");
  CHECK(like.y->z == "nested");
  // The files are the object's storage: what a loader reads back.
  like.X.fill_(3);
  const Data again = Data::load_memmap((dir / "like").string());
  CHECK((again.X == 3).all().item<bool>());
  CHECK(again.z == "test_tensorclass");
}

TEST_CASE("to_dict and from_dict round trip (test_tensorclass.py::TestTensorClass::test_to_dict)",
          "[tensorclass][extras]") {
  const Data d = data();
  const auto dict = d.to_dict();
  CHECK(dict.at("z").toStringRef() == "test_tensorclass");
  CHECK(dict.at("X").toTensor().is_same(d.X));
  const auto nested = dict.at("y").toGenericDict();
  CHECK(nested.at("X").toTensor().is_same(d.y->X));
  const Data back = Data::from_dict(dict, {.auto_batch_size = true, .batch_dims = 2});
  CHECK(back.batch_size() == at::IntArrayRef({3, 4}));
  CHECK(same(back.X, d.X));
  CHECK(back.y->z == "nested");
  CHECK(Data::from_dict(dict, {.batch_size = std::vector<int64_t>{3, 4}}).batch_size() == at::IntArrayRef({3, 4}));
  // Python's from_dict gives no batch dims by default; the schema declares X's
  // dims past the batch, so the batch size must be given or inferred.
  CHECK(message_of([&] { (void)Data::from_dict(dict); }) ==
        "Data.X: expected 1 dims (0 batch + 1 declared) but got shape [3, 4, 5]");

  c10::Dict<std::string, c10::IValue> extra = dict.copy();
  extra.insert("unknown", at::ones({3}));
  CHECK_THROWS_AS(Data::from_dict(extra), tensordict::KeyError);
}

TEST_CASE("replace returns a copy with fields replaced (test_tensorclass.py::TestTensorClass::test_replace)",
          "[tensorclass][extras]") {
  const Data d = data();
  const Data r = d.replace(TensorDict({{"X", at::zeros({3, 4, 5})}, {"z", tensordict::NonTensorData("replacement")}}, {3, 4}));
  CHECK(d.z == "test_tensorclass");
  CHECK(r.z == "replacement");
  CHECK((r.X == 0).all().item<bool>());
  CHECK((d.X != 0).any().item<bool>());
  CHECK(r.y->X.is_same(d.y->X));  // the rest is shared, as tensordict's shallow copy
  CHECK(d.replace(TensorDict({}, {3, 4})).X.is_same(d.X));
  CHECK_THROWS_WITH(d.replace(TensorDict({{"X", at::zeros({3, 4, 6})}}, {3, 4})), Catch::Matchers::Contains("Data.X"));
}

TEST_CASE("setting the batch size (test_tensorclass.py::TestTensorClass::test_batch_size)", "[tensorclass][extras]") {
  // A schema declares each field's dims past the batch: a batch size of
  // another rank is refused, naming the field, and nothing changes.
  Data d = data();
  CHECK(message_of([&] { d.set_batch_size({3}); }) == "Data.X: expected 2 dims (1 batch + 1 declared) but got shape [3, 4, 5]");
  CHECK(d.batch_size() == at::IntArrayRef({3, 4}));
  // Not a prefix of a field: tensordict's RuntimeError.
  CHECK(message_of([&] { d.set_batch_size({4, 3}); }) == "cannot set batch size [4, 3]: key 'X' has shape [3, 4, 5]");
  CHECK(d.batch_size() == at::IntArrayRef({3, 4}));
  d.set_batch_size({3, 4});
  CHECK(d.batch_size() == at::IntArrayRef({3, 4}));

  // Fields that allow it: the batch size changes, names kept for the dims that remain.
  Meta m({.z = "m"}, {3, 4});
  m.rename_({"i", "j"});
  m.set_batch_size({3});
  CHECK(m.batch_size() == at::IntArrayRef({3}));
  REQUIRE(m.names().size() == 1);
  CHECK(m.names()[0] == std::optional<std::string>("i"));
  m.k = at::ones({3});
  m.lock_();
  m.set_batch_size({3});  // tensordict allows it on a locked object, and it stays locked
  CHECK(m.is_locked());
  CHECK(message_of([&] { m.set_batch_size({3, 2}); }) == "cannot set batch size [3, 2]: key 'k' has shape [3]");
}

TEST_CASE("copy_, copy_at_, separates, non_tensor_items, filter_non_tensor_data, auto_device_ on a generated class",
          "[tensorclass][extras][buffers]") {
  Data d = data();
  const at::Tensor x = d.X;
  d.copy_(d * 2);
  CHECK(same(x, at::arange(60, at::kFloat).view({3, 4, 5}) * 2));
  d.copy_at_(data().index({0}), {1});
  CHECK(same(x.index({1}), at::arange(20, at::kFloat).view({4, 5})));

  const auto items = d.non_tensor_items({.include_nested = true});
  REQUIRE(items.size() == 2);
  CHECK(items[0].first.repr() == "'z'");
  CHECK(items[1].first.repr() == "('y', 'z')");
  CHECK(items[1].second.data() == "nested");

  const TensorDict tensors = d.filter_non_tensor_data();
  CHECK(tensors.keys({.include_nested = true, .leaves_only = true}).size() == 2);
  CHECK(tensors.get("X").is_same(d.X));

  Data with_k = data();
  const at::Tensor k = at::ones({3, 4});
  with_k.k = k;
  const at::Tensor nested_x = with_k.y->X;
  const TensorDict removed = with_k.separates({"k", "y"});
  CHECK(removed.get("k").is_same(k));
  CHECK(removed.get({"y", "X"}).is_same(nested_x));
  CHECK(removed.batch_size() == at::IntArrayRef({3, 4}));
  CHECK_FALSE(with_k.k.defined());
  CHECK_FALSE(with_k.y.has_value());
  CHECK_THROWS_AS(with_k.separates({"k"}), tensordict::KeyError);
  CHECK(with_k.separates({"k"}, {.strict = false}).num_keys() == 0);
  // Nothing removed when a required field is asked for.
  Data keep = data();
  CHECK_THROWS_WITH(keep.separates({"X"}), Catch::Matchers::Contains("Data.X"));
  CHECK(keep.X.defined());

  Data moved = data();
  CHECK_FALSE(moved.device().has_value());
  moved.auto_device_();
  CHECK(moved.device() == at::Device(at::kCPU));
  CHECK(moved.y->device() == at::Device(at::kCPU));
}
