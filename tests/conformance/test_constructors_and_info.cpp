// Ports of tensordict's tests of new_*/ *_like constructors, fromkeys,
// expand_as, pad_sequence's masks, softmax, logsumexp, all/any names, and the
// introspection methods (sorted_keys, popitem, depth, bytes, data_ptr).
#include "fixtures.h"

#include <nlohmann/json.hpp>

using namespace conformance;
using tensordict::Names;

TEST_CASE("new_zeros / new_ones / new_empty / new_full over every fixture (test_methods.py::test_new_zeros, test_new_ones, "
          "test_new_empty, test_new_full)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    CHECK(td.new_zeros({0}).batch_size() == at::IntArrayRef{0});
    const TensorDict zeros = td.new_zeros({2, 3});
    CHECK(zeros.batch_size() == at::IntArrayRef{2, 3});
    CHECK((zeros == 0).all());
    // Leaves keep their feature dims and dtypes.
    CHECK(zeros.get("a").sizes() == at::IntArrayRef{2, 3, 5});
    CHECK(zeros.get("c").scalar_type() == at::kLong);
    CHECK((td.new_ones({2, 3}) == 1).all());
    CHECK(td.new_empty({2, 3}).batch_size() == at::IntArrayRef{2, 3});
    CHECK(td.new_full({0}, 2).batch_size() == at::IntArrayRef{0});
    const TensorDict full = td.new_full({2, 3}, 2);
    CHECK((full == 2).all());
    CHECK(td.new_zeros({2}, at::kDouble).get("c").scalar_type() == at::kDouble);
    if (name == "td_with_non_tensor") CHECK(full.get_non_tensor({"data", "non_tensor"}) == "some text data");
  });
  CHECK(CONF_MESSAGE(TensorDict({{"a", at::zeros({2})}}, {2}).new_zeros({-1})) == "new_zeros: negative size in batch size [-1]");
}

TEST_CASE("new_* names follow the trailing dims (base.py _new_impl)", "[conformance][test_methods.py]") {
  TensorDict td({{"a", at::zeros({2, 3, 4})}}, {2, 3}, std::nullopt, {"x", "y"});
  CHECK((td.new_zeros({5, 2, 3}).names() == Names{std::nullopt, "x", "y"}));
  CHECK((td.new_zeros({3}).names() == Names{"y"}));
  CHECK(td.new_zeros({}).batch_size().empty());
}

TEST_CASE("*_like constructors (test_misc.py::test_zeros_like)", "[conformance][test_misc.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const TensorDict zeros = tensordict::zeros_like(td);
    CHECK(zeros.batch_size() == td.batch_size());
    CHECK(zeros.keys({.include_nested = true, .leaves_only = true}) == td.keys({.include_nested = true, .leaves_only = true}));
    CHECK((zeros == 0).all());
    CHECK((tensordict::ones_like(td) == 1).all());
    CHECK((tensordict::full_like(td, 3) == 3).all());
    CHECK(tensordict::empty_like(td).get("c").scalar_type() == at::kLong);
    // rand_like / randn_like need floating leaves, as torch's do (libtorch
    // 2.x raises NotImplementedError, as Python's torch does; 1.13 a
    // RuntimeError): a library error either way.
    CHECK_THROWS_AS(tensordict::rand_like(td), tensordict::Error);
    const TensorDict r = tensordict::rand_like(td.to(at::kFloat));
    CHECK(((r.get("a") >= 0) & (r.get("a") < 1)).all().item<bool>());
    CHECK(tensordict::randn_like(td.to(at::kFloat)).get("b").sizes() == td.get("b").sizes());
  });
}

TEST_CASE("fromkeys (test_generic.py::test_fromkeys)", "[conformance][test_generic.py]") {
  TensorDict td = TensorDict::fromkeys({"a", "b", "c"});
  CHECK(td.get("a").item<int64_t>() == 0);
  CHECK(td.get("a").scalar_type() == at::kLong);
  td = TensorDict::fromkeys({"a", "b", "c"}, 1);
  CHECK(td.get("b").item<int64_t>() == 1);
  CHECK(TensorDict::fromkeys({"x"}, 0.5).get("x").scalar_type() == at::kFloat);
  CHECK(TensorDict::fromkeys({tensordict::NestedKey({"n", "x"})}, true).get({"n", "x"}).item<bool>());
  CHECK(TensorDict::fromkeys({"a"}).batch_size().empty());
}

TEST_CASE("expand_as (test_generic.py::test_expand_as)", "[conformance][test_generic.py]") {
  const TensorDict td0({{"a", at::ones({3, 1, 4})}, {"b", TensorDict({{"c", at::ones({3, 2, 1, 4})}}, {3})}}, {3});
  const TensorDict td1({{"a", at::zeros({2, 3, 5, 4})}, {"b", TensorDict({{"c", at::zeros({2, 3, 2, 6, 4})}}, {2, 3})}}, {2, 3});
  const TensorDict expanded = td0.expand_as(td1);
  CHECK((expanded == 1).all());
  CHECK(expanded.batch_size() == at::IntArrayRef{2, 3});
  CHECK(expanded.get({"b", "c"}).sizes() == at::IntArrayRef{2, 3, 2, 6, 4});
  CHECK(td0.expand_as(at::zeros({2, 3})).get("a").sizes() == at::IntArrayRef{2, 3, 1, 4});
}

TEST_CASE("softmax over every fixture (test_methods.py::test_softmax)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (name == "sub_td" || name == "sub_td2") return;  // skipped by tensordict too
    const TensorDict floats = td.to(at::kFloat);
    for (int64_t dim : {0, 1, -1}) {
      const TensorDict out = floats.softmax(dim);
      CHECK(out.batch_size() == td.batch_size());
      CHECK(at::allclose(out.get("a"), at::softmax(floats.get("a"), dim < 0 ? dim + 4 : dim)));
    }
  });
  CHECK_THROWS_AS(TensorDict({{"a", at::zeros({2})}}, {2}).softmax(1), std::out_of_range);
}

TEST_CASE("logsumexp over every fixture (test_methods.py::test_logsumexp)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (name == "td_with_non_tensor") return;
    const TensorDict floats = td.to(at::kFloat);
    for (bool keepdim : {false, true}) {
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {1}, {0, 1}, {-1}}) {
        const TensorDict out = floats.logsumexp(dims, {.keepdim = keepdim});
        std::vector<int64_t> over = dims;
        if (over.empty()) over = {0, 1, 2, 3};
        for (auto& d : over) d = d < 0 ? d + 4 : d;
        CHECK(at::allclose(out.get("a"), at::logsumexp(floats.get("a"), over, keepdim)));
        CHECK(out.batch_size() == at::logsumexp(at::zeros(td.batch_size()), over, keepdim).sizes());
      }
    }
  });
  CHECK(CONF_MESSAGE(TensorDict({{"a", at::zeros({2})}}).logsumexp()) ==
        "logsumexp: the tensordict has no batch dim to reduce over");
}

TEST_CASE("all(dim) and any(dim) keep the other dims' names (_td.py all/any)", "[conformance][test_nameddims.py]") {
  TensorDict td({{"a", at::ones({2, 3, 4})}}, {2, 3}, std::nullopt, {"x", "y"});
  CHECK((td.all(0).names() == Names{"y"}));
  CHECK((td.any(1).names() == Names{"x"}));
}

TEST_CASE("sorted_keys over every fixture (test_methods.py::test_sorted_keys)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    std::vector<std::string> keys;
    for (const auto& k : td.keys()) keys.push_back(k.back());
    std::sort(keys.begin(), keys.end());
    CHECK(td.sorted_keys() == keys);
  });
  TensorDict td({{"z", at::zeros({1})}, {"a", at::zeros({1})}, {"m", at::zeros({1})}});
  CHECK(td.sorted_keys() == std::vector<std::string>{"a", "m", "z"});
}

TEST_CASE("popitem (test_methods.py::test_popitem)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (name == "sub_td" || name == "sub_td2" || name == "td_h5") return;  // NotImplementedError in tensordict
    if (td.is_locked()) td.unlock_();  // tensordict's test: `with td.unlock_():`
    const auto before = td.keys();
    const auto [key, value] = td.popitem();
    CHECK(key == before.back().back());
    CHECK(td.keys().size() == before.size() - 1);
    CHECK_FALSE(td.contains(key));
  });
  TensorDict td({{"x", at::zeros({2})}, {"y", at::ones({2})}}, {2});
  auto [key, value] = td.popitem();
  CHECK(key == "y");
  CHECK(at::equal(value.tensor(), at::ones({2})));
  td.popitem();
  CHECK_THROWS_AS(td.popitem(), tensordict::KeyError);
  CHECK(CONF_MESSAGE(td.popitem()) == "popitem(): the tensordict is empty");
  TensorDict locked({{"x", at::zeros({2})}}, {2});
  locked.lock_();
  CHECK_THROWS_AS(locked.popitem(), std::runtime_error);
  CHECK(locked.contains("x"));
}

TEST_CASE("depth (test_generic.py::test_depth)", "[conformance][test_generic.py]") {
  auto scalar = [] { return at::tensor(0); };
  TensorDict td({{"a", TensorDict({{"b", TensorDict({{"c", TensorDict({{"d", scalar()}})}, {"e", scalar()}})}, {"f", scalar()}})},
                 {"g", scalar()}});
  CHECK(td.depth() == 3);
  td.del_({"a", "b", "c", "d"});
  CHECK(td.depth() == 2);
  td.del_({"a", "b", "c"});
  td.del_({"a", "b", "e"});
  CHECK(td.depth() == 1);
  td.del_({"a", "b"});
  td.del_({"a", "f"});
  CHECK(td.depth() == 0);
}

TEST_CASE("bytes (test_generic.py::test_bytes, dense leaves)", "[conformance][test_generic.py]") {
  const at::Tensor tensor = at::zeros({3});
  at::Tensor with_grad = at::ones({3}).set_requires_grad(true);
  (with_grad + 1).sum().backward();
  TensorDict td({{"tensor", tensor}, {"tensor_with_grad", with_grad}, {"again", tensor}});
  CHECK(td.bytes() == 12 + 24 + 12);
  CHECK(td.bytes({.count_duplicates = false}) == 12 + 24);
  CHECK(TensorDict({{"c", at::zeros({2, 3}, at::kLong)}}, {2}).bytes() == 48);
}

TEST_CASE("data_ptr over every fixture (test_methods.py::test_data_ptr)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    const TensorDict ptrs = td.data_ptr();
    CHECK(ptrs.batch_size().empty());
    CHECK(td.data_ptr({.storage = true}).batch_size().empty());
    if (name == "td" || name == "nested_td" || name == "memmap_td") {
      CHECK(ptrs.get("a").item<int64_t>() == reinterpret_cast<std::intptr_t>(td.get("a").data_ptr()));
    }
  });
}

// Ports test_generic.py::TestGeneric::test_pad_sequence_pad_dim1 (make_mask=True).
TEST_CASE(
    "pad_sequence masks past the batch have the batch shape plus the padded dim "
    "(test_generic.py::test_pad_sequence_pad_dim1)",
    "[conformance][test_generic.py]") {
  const TensorDict t1({{"a", at::ones({6, 3, 8})}, {{"b", "c"}, at::ones({6, 3})}}, {6});
  const TensorDict t2({{"a", at::full({6, 5, 8}, 2.0)}, {{"b", "c"}, at::full({6, 7}, 2.0)}}, {6});
  const TensorDict out = tensordict::pad_sequence({t1, t2}, {.pad_dim = 1, .padding_value = 0, .return_mask = true});
  REQUIRE(out.batch_size() == at::IntArrayRef({2, 6}));
  REQUIRE(out.get("a").sizes() == at::IntArrayRef({2, 6, 5, 8}));
  REQUIRE(out.get({"b", "c"}).sizes() == at::IntArrayRef({2, 6, 7}));
  const at::Tensor mask_a = out.get({"masks", "a"}), mask_c = out.get({"masks", "b", "c"});
  REQUIRE(mask_a.sizes() == at::IntArrayRef({2, 6, 5}));
  REQUIRE(mask_c.sizes() == at::IntArrayRef({2, 6, 7}));
  REQUIRE(at::equal(mask_a.sum(-1), at::tensor({3, 5}, at::kLong).view({2, 1}).expand({2, 6})));
  REQUIRE(at::equal(mask_c.sum(-1), at::tensor({3, 7}, at::kLong).view({2, 1}).expand({2, 6})));
  REQUIRE(out.get("a").index({mask_a}).ne(0).all().item<bool>());
  REQUIRE(out.get("a").index({~mask_a}).eq(0).all().item<bool>());
  REQUIRE(out.get({"b", "c"}).index({~mask_c}).eq(0).all().item<bool>());
}
