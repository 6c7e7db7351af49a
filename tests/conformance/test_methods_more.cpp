// More ports of tensordict's TestTensorDicts tests (test_methods.py): clear,
// create_nested, expand, flatten/unflatten, indexing with None, nested
// sub-tensordict indexing, named_apply and maximum, each run over every
// fixture kind. Expected values are plain libtorch on the fixture's leaves.
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"

using namespace conformance;
using tensordict::LockGuard;
using tensordict::NestedKey;

TEST_CASE("clear empties the tensordict in place (test_methods.py::test_clear)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    LockGuard unlocked(td, LockGuard::Unlock);
    TensorDict& cleared = td.clear();
    CHECK(&cleared == &td);
    CHECK(td.is_empty());
    CHECK(td.keys({.include_nested = true, .leaves_only = true}).empty());
  });
}

TEST_CASE("create_nested makes empty nested tensordicts with the batch size (test_methods.py::test_create_nested)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    {
      LockGuard unlocked(td, LockGuard::Unlock);
      td.create_nested("root");
      CHECK(td.get_td("root").batch_size() == td.batch_size());
      CHECK(td.get_td("root").is_empty());
      td.create_nested({"some", "nested", "key"});
      CHECK(td.get_td({"some", "nested", "key"}).batch_size() == td.batch_size());
      CHECK(td.get_td("some").get_td("nested").get_td("key").is_empty());
      td.del_("root");
      CHECK_FALSE(td.contains("root"));
    }
    if (is_sub_td(name)) return;  // a sub-tensordict cannot be locked itself (as tensordict's test)
    LockGuard locked(td);
    CHECK_THROWS_AS(td.create_nested("root"), std::runtime_error);
    CHECK_THAT(CONF_MESSAGE(td.create_nested("root")), Catch::Contains("Cannot modify locked TensorDict"));
  });
}

TEST_CASE("expand adds leading dims, each slice equal to the source (test_methods.py::test_expand)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    std::vector<int64_t> expected{3};
    expected.insert(expected.end(), td.batch_size().begin(), td.batch_size().end());
    const TensorDict expanded = td.expand(expected);
    CHECK(expanded.batch_size() == at::IntArrayRef(expected));
    const auto leaves = snapshot(td);
    for (const auto& [key, value] : leaves) {
      CAPTURE(key.repr());
      const at::Tensor got = expanded.get(key);
      for (int64_t i = 0; i < 3; ++i) CHECK(same_tensor(got[i].contiguous(), value));
    }
  });
}

TEST_CASE("flatten then unflatten gives the tensordict back (test_methods.py::test_flatten_unflatten)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const std::vector<int64_t> shape(td.batch_size().begin(), td.batch_size().begin() + 3);
    const TensorDict flat = td.flatten(0, 2);
    CHECK(flat.batch_size()[0] == shape[0] * shape[1] * shape[2]);
    const TensorDict back = flat.unflatten(0, shape);
    CHECK(back.batch_size() == td.batch_size());
    for (const auto& [key, value] : snapshot(td)) {
      CAPTURE(key.repr());
      CHECK(same_tensor(back.get(key).contiguous(), value));
    }
  });
}

TEST_CASE("indices with None add dims as they do for a tensor (test_methods.py::test_index_none)",
          "[conformance][test_methods.py]") {
  using at::indexing::Ellipsis;
  using at::indexing::None;
  using at::indexing::Slice;
  using Index = std::vector<at::indexing::TensorIndex>;
  // (index into the tensordict, the same index written for a leaf): an
  // ellipsis covers the batch dims only (4 of them in every fixture).
  const std::vector<std::pair<Index, Index>> indices = {{{None}, {None}},
                                                        {{Ellipsis, None}, {Slice(), Slice(), Slice(), Slice(), None}},
                                                        {{None, Ellipsis}, {None}},
                                                        {{0, None}, {0, None}},
                                                        {{None, 0}, {None, 0}},
                                                        {{Slice(), 0, None}, {Slice(), 0, None}},
                                                        {{None, Slice(), 0}, {None, Slice(), 0}},
                                                        {{Slice(), None, 0}, {Slice(), None, 0}},
                                                        {{0, Ellipsis, None}, {0, Slice(), Slice(), Slice(), None}}};
  for_each_fixture([&](const std::string&, TensorDict& td) {
    REQUIRE(td.batch_dims() == 4);
    const at::Tensor batch_zeros = at::zeros(td.batch_size());
    const auto leaves = snapshot(td);
    for (const auto& [index, leaf_index] : indices) {
      const TensorDict got = td.index(index);
      CHECK(got.batch_size() == batch_zeros.index(index).sizes());
      for (const auto& [key, value] : leaves) {
        CAPTURE(key.repr());
        CHECK(same_tensor(got.get(key).contiguous(), value.index(leaf_index)));
      }
    }
  });
}

TEST_CASE(
    "nested tensordicts with more batch dims are reached and replaced by key path "
    "(test_methods.py::test_nested_td_index)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    td.unlock_();
    auto with = [&](std::vector<int64_t> extra) {
      std::vector<int64_t> shape(td.batch_size().begin(), td.batch_size().end());
      shape.insert(shape.end(), extra.begin(), extra.end());
      return shape;
    };
    TensorDict sub_td({}, with({2}));
    sub_td.set("sub_sub_td", TensorDict({{"a", at::zeros(with({2, 2}))}}, with({2, 2})));
    td.set("sub_td", sub_td);
    CHECK(td.get({"sub_td", "sub_sub_td", "a"}).eq(0).all().item<bool>());
    CHECK(at::equal(td.get_td("sub_td").get_td("sub_sub_td").get("a"), td.get({"sub_td", "sub_sub_td", "a"})));
    td.set({"sub_td", "sub_sub_td"}, TensorDict({{"a", at::ones(with({2, 2}))}}, with({2, 2})));
    CHECK(td.get({"sub_td", "sub_sub_td", "a"}).eq(1).all().item<bool>());
    CHECK(at::equal(td.get_td("sub_td").get_td("sub_sub_td").get("a"), td.get({"sub_td", "sub_sub_td", "a"})));
    td.set({"sub_td", "sub_sub_td"}, TensorDict({{"b", at::ones(with({2, 2}))}}, with({2, 2})));
    if (is_sub_td(name)) return;  // tensordict's test checks nothing more for them
    CHECK(td.get({"sub_td", "sub_sub_td", "b"}).eq(1).all().item<bool>());
    CHECK(at::equal(td.get_td("sub_td").get_td("sub_sub_td").get("b"), td.get({"sub_td", "sub_sub_td", "b"})));
  });
}

TEST_CASE(
    "named_apply sees each leaf's key and drops the leaves it returns nothing for "
    "(test_methods.py::test_named_apply, inplace=False)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const auto leaves = snapshot(td);
    const tensordict::TensorDict out = td.named_apply([](const NestedKey& key, const at::Tensor& x) {
      return key.path().back().find('a') != std::string::npos ? x + 1 : at::Tensor();
    });
    std::size_t kept = 0;
    for (const auto& [key, value] : leaves) {
      CAPTURE(key.repr());
      const bool has_a = key.path().back().find('a') != std::string::npos;
      CHECK(out.contains(key) == has_a);
      if (!has_a) continue;
      ++kept;
      CHECK(same_tensor(out.get(key), value + 1));
      CHECK(same_tensor(td.get(key).contiguous(), value));  // the source is unchanged
    }
    std::size_t tensors = 0;
    for (const auto& [key, value] : out.items({.include_nested = true, .leaves_only = true})) tensors += value.is_tensor() ? 1 : 0;
    CHECK(tensors == kept);
  });
}

TEST_CASE("maximum of a tensordict with itself is a tensordict of the leaves (test_methods.py::test_maximum)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const tensordict::TensorDict out = td.maximum(td);
    for (const auto& [key, value] : snapshot(td)) {
      CAPTURE(key.repr());
      CHECK(same_tensor(out.get(key), value));
    }
  });
}

TEST_CASE("to(device) gives the device, and a tensordict already there is returned as it is (test_methods.py::test_cast_device)",
          "[conformance][test_methods.py]") {
  const at::Device cpu(at::kCPU);
  for_each_fixture([&](const std::string&, TensorDict& td) {
    const auto before = snapshot(td);
    const TensorDict td_device = td.to(cpu);
    CHECK(td_device.device() == cpu);
    for (const auto& [key, value] : before) {
      CAPTURE(key.repr());
      CHECK(td_device.get(key).device() == cpu);
      CHECK(same_tensor(td_device.get(key), value));
    }
    // tensordict: td_device.to(device_cast) is td_device
    CHECK(td_device.to(cpu).impl() == td_device.impl());
    CHECK(td_device.clone().device() == cpu);
  });
}
