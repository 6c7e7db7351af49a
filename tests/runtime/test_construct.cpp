// state_dict round trips, inferred batch sizes, merging, padding, named casts.
#include <torch/csrc/jit/serialization/pickle.h>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

TEST_CASE("state_dict has tensordict's structure and survives libtorch serialisation") {
  TensorDict td({{"1", at::tensor(1)}, {"2", at::tensor(2)}, {"3", TensorDict({{"3", at::tensor(3)}})}}, {});
  StateDict sd = td.state_dict();
  std::vector<std::string> keys;
  for (const auto& e : sd) keys.push_back(e.key());
  REQUIRE(keys == std::vector<std::string>{"1", "2", "3", "__batch_size", "__device"});
  REQUIRE(sd.at("__device").isNone());
  auto nested = sd.at("3").toGenericDict();
  REQUIRE(nested.at("3").toTensor().item<int64_t>() == 3);
  REQUIRE(nested.contains("__batch_size"));

  StateDict flat = td.state_dict({.keep_vars = false, .flatten = true});
  keys.clear();
  for (const auto& e : flat) keys.push_back(e.key());
  REQUIRE(keys == std::vector<std::string>{"1", "2", "3.3", "__batch_size", "__device"});

  // Through libtorch's pickler and back, then into a zeroed tensordict.
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(sd));
  auto restored = c10::impl::toTypedDict<std::string, c10::IValue>(torch::jit::pickle_load(bytes).toGenericDict());
  TensorDict zeroed({{"1", at::tensor(0)}, {"2", at::tensor(0)}, {"3", TensorDict({{"3", at::tensor(0)}})}}, {});
  at::Tensor before = zeroed.get({"3", "3"});
  zeroed.load_state_dict(restored);
  REQUIRE(zeroed.get({"3", "3"}).item<int64_t>() == 3);
  REQUIRE(zeroed.get({"3", "3"}).data_ptr() == before.data_ptr());  // copied in place
  TensorDict zeroed_flat({{"1", at::tensor(0)}, {"2", at::tensor(0)}, {"3", TensorDict({{"3", at::tensor(0)}})}}, {});
  zeroed_flat.load_state_dict(flat, {.strict = true, .assign = false, .from_flatten = true});
  REQUIRE(zeroed_flat.get({"3", "3"}).item<int64_t>() == 3);
}

TEST_CASE("load_state_dict: batch size, device, assign, strict errors") {
  TensorDict src({{"x", iota({4, 2})}, {"n", TensorDict({{"y", iota({4, 3})}}, {4, 3})}}, {4}, at::Device(at::kCPU));
  TensorDict empty;
  empty.load_state_dict(src.state_dict(), {.strict = false, .assign = true});
  REQUIRE(empty.batch_size() == at::IntArrayRef({4}));
  REQUIRE(empty.device() == at::Device(at::kCPU));
  REQUIRE(empty.get_td("n").batch_size() == at::IntArrayRef({4, 3}));
  REQUIRE(at::equal(empty.get({"n", "y"}), src.get({"n", "y"})));
  TensorDict partial({{"x", at::zeros({4, 2})}}, {4});
  REQUIRE_THAT(TD_MESSAGE(partial.load_state_dict(src.state_dict())),
               Contains("load_state_dict: key 'n' is in the state dict but not in the tensordict"));
  TensorDict extra({{"x", at::zeros({4, 2})}, {"n", TensorDict({{"y", at::zeros({4, 3})}}, {4, 3})}, {"z", at::zeros({4})}}, {4});
  REQUIRE_THAT(TD_MESSAGE(extra.load_state_dict(src.state_dict())),
               Contains("load_state_dict: key 'z' is in the tensordict but not in the state dict"));
  TensorDict wrong({{"x", at::zeros({4, 5})}, {"n", TensorDict({{"y", at::zeros({4, 3})}}, {4, 3})}}, {4});
  REQUIRE_THAT(TD_MESSAGE(wrong.load_state_dict(src.state_dict())), Contains("set_ failed for key 'x'"));
  REQUIRE_FALSE(src.state_dict().at("x").toTensor().requires_grad());
}

TEST_CASE("make_tensordict and auto_batch_size_ infer the batch size") {
  auto td = make_tensordict({{"a", at::zeros({3, 4})}, {"b", TensorDict({{"c", at::zeros({3, 4, 5})}})}});
  REQUIRE(td.batch_size() == at::IntArrayRef({3, 4}));
  REQUIRE(td.get_td("b").batch_size() == at::IntArrayRef({3, 4, 5}));
  auto limited = make_tensordict({{"a", at::zeros({3, 4})}, {"b", at::zeros({3, 4, 2})}}, std::nullopt, std::nullopt, 1);
  REQUIRE(limited.batch_size() == at::IntArrayRef({3}));
  auto given = make_tensordict({{"a", at::zeros({3, 4})}}, std::vector<int64_t>{3});
  REQUIRE(given.batch_size() == at::IntArrayRef({3}));
  TensorDict mixed({{"a", at::zeros({3, 4})}, {"b", at::zeros({3, 2})}}, {});
  mixed.auto_batch_size_();
  REQUIRE(mixed.batch_size() == at::IntArrayRef({3}));
  TensorDict none({{"a", at::zeros({3})}, {"b", at::zeros({2})}}, {});
  none.auto_batch_size_();
  REQUIRE(none.batch_size().empty());
  // batch_dims bounds the nested levels too (tensordict 0.15.3: [3, 4] and [3, 4]).
  TensorDict deep({{"X", at::zeros({3, 4, 5})}, {"y", TensorDict({{"X", at::zeros({3, 4, 5})}})}}, {});
  deep.auto_batch_size_(2);
  REQUIRE(deep.batch_size() == at::IntArrayRef({3, 4}));
  REQUIRE(deep.get_td("y").batch_size() == at::IntArrayRef({3, 4}));
}

TEST_CASE("merge_tensordicts") {
  TensorDict a({{"x", at::zeros({2})}, {"n", TensorDict({{"p", at::zeros({2})}}, {2})}}, {2});
  TensorDict b({{"y", at::ones({2})}, {"n", TensorDict({{"q", at::ones({2})}}, {2})}, {"x", at::full({2}, 5.0)}}, {2});
  auto m = merge_tensordicts({a, b});
  // The first's structure first (tensordict's empty(recurse=True)), then each
  // leaf in the order met; the first tensordict holding a key gives its value.
  REQUIRE(m.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{{"n", "p"}, {"n", "q"}, "x", "y"});
  REQUIRE(at::equal(m.get("x"), at::zeros({2})));
  REQUIRE_FALSE(a.contains("y"));
  REQUIRE_THAT(TD_MESSAGE(merge_tensordicts({a})), Equals("merge_tensordicts: at least 2 tensordicts must be provided, got 1"));
}

TEST_CASE("pad pads batch dims from the first one on") {
  TensorDict td({{"a", at::ones({3, 4, 1})}, {"b", at::ones({3, 4, 1, 1})}}, {3, 4});
  auto p = pad(td, {0, 1, 0, 2}, 0.0);
  REQUIRE(p.batch_size() == at::IntArrayRef({4, 6}));
  REQUIRE(p.get("a").sizes() == at::IntArrayRef({4, 6, 1}));
  REQUIRE(p.get("b").sizes() == at::IntArrayRef({4, 6, 1, 1}));
  REQUIRE(at::equal(p.get("a"), at::constant_pad_nd(at::ones({3, 4, 1}), {0, 0, 0, 2, 0, 1}, 0)));
  auto cropped = pad(td, {-1, 0}, 7);
  REQUIRE(cropped.batch_size() == at::IntArrayRef({2, 4}));
  REQUIRE_THAT(TD_MESSAGE(pad(td, {1, 1, 1})), Contains("must have an even length"));
  REQUIRE_THAT(TD_MESSAGE(pad(td, {-4, 0})), Contains("crops batch dim 0 below zero"));
}

TEST_CASE("pad_sequence pads each key to its longest length and stacks") {
  TensorDict t1({{"a", at::ones({3, 8})}, {"b", at::ones({6, 8})}}, {});
  TensorDict t2({{"a", at::full({5, 8}, 2.0)}, {"b", at::ones({6, 8})}}, {});
  auto out = pad_sequence({t1, t2}, {.return_mask = true});
  REQUIRE(out.batch_size() == at::IntArrayRef({2}));
  REQUIRE(out.get("a").sizes() == at::IntArrayRef({2, 5, 8}));
  REQUIRE(out.get("a").index({0, at::indexing::Slice(3, 5)}).eq(0).all().item<bool>());
  REQUIRE(out.get("a").index({1}).eq(2).all().item<bool>());
  // The batch is empty: a mask has the padded dim only.
  REQUIRE(out.get({"masks", "a"}).sizes() == at::IntArrayRef({2, 5}));
  REQUIRE(at::equal(out.get({"masks", "a"}), at::tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}).to(at::kBool).view({2, 5})));
  REQUIRE(out.get({"masks", "b"}).all().item<bool>());

  TensorDict s1({{"x", at::ones({2, 3})}}, {2});
  TensorDict s2({{"x", at::ones({4, 3})}}, {4});
  auto batched = pad_sequence({s1, s2}, {.padding_value = -1});
  REQUIRE(batched.batch_size() == at::IntArrayRef({2, 4}));
  REQUIRE(batched.get("x").index({0, 3}).eq(-1).all().item<bool>());
  REQUIRE_THAT(TD_MESSAGE(pad_sequence({s1, s2}, {.pad_dim = 2})), Contains("pad_dim 2 is out of range for key 'x' of shape [2, 3]"));
}

// Ports test_generic.py::TestGeneric::test_pad_sequence_pad_dim0 (make_mask=True).
TEST_CASE("pad_sequence masks along a batch dim have the batch shape") {
  for (const double pad_val : {0.0, -1.0}) {
    const TensorDict t1({{"a", at::ones({2, 8, 8})}, {{"b", "c"}, at::ones({2, 3})}}, {2});
    const TensorDict t2({{"a", at::full({4, 8, 8}, 2.0)}, {{"b", "c"}, at::full({4, 3}, 2.0)}}, {4});
    const TensorDict out = pad_sequence({t1, t2}, {.padding_value = pad_val, .return_mask = true});
    REQUIRE(out.batch_size() == at::IntArrayRef({2, 4}));
    REQUIRE(out.get("a").sizes() == at::IntArrayRef({2, 4, 8, 8}));
    REQUIRE(out.get("a").index({0, at::indexing::Slice(2)}).eq(pad_val).all().item<bool>());
    const auto expected_mask = at::tensor({1, 1, 0, 0, 1, 1, 1, 1}).to(at::kBool).view({2, 4});
    for (const auto& [key, mask_key] : {std::pair<NestedKey, NestedKey>{"a", {"masks", "a"}},
                                        std::pair<NestedKey, NestedKey>{{"b", "c"}, {"masks", "b", "c"}}}) {
      const at::Tensor mask = out.get(mask_key);
      REQUIRE(at::equal(mask, expected_mask));
      REQUIRE(out.get(key).index({mask}).ne(pad_val).all().item<bool>());
      REQUIRE(out.get(key).index({~mask}).eq(pad_val).all().item<bool>());
    }
  }
}

TEST_CASE("named dtype casts") {
  auto td = sample({2});
#define CHECK_CAST(name, dtype) REQUIRE(td.name().get("a").scalar_type() == dtype);
  TENSORDICT_DTYPE_CASTS(CHECK_CAST)
#undef CHECK_CAST
  REQUIRE(at::equal(td.to_long().get("a"), td.get("a").to(at::kLong)));
}
