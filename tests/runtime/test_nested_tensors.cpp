// Nested (jagged) tensor leaves: shapes with ragged dims, and to_padded_tensor,
// checked against padded tensors and masks built by hand from the components.
#include <torch/nested.h>
#include <nlohmann/json.hpp>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

// Two [3, L, 5] components with L = 4 and 6: ragged in dim 2 of the nested tensor.
std::vector<at::Tensor> components() { return {iota({3, 4, 5}) + 1, iota({3, 6, 5}) + 100}; }

at::Tensor nested(const std::vector<at::Tensor>& parts) { return torch::nested::nested_tensor(parts); }

// The padded tensor and the mask of real data, one component at a time.
std::pair<at::Tensor, at::Tensor> padded_by_hand(const std::vector<at::Tensor>& parts, at::IntArrayRef padded_shape, double padding) {
  at::Tensor padded = at::full(padded_shape, padding);
  at::Tensor valid = at::zeros(padded_shape, at::kBool);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    at::Tensor region = padded[static_cast<int64_t>(i)];
    at::Tensor valid_region = valid[static_cast<int64_t>(i)];
    for (int64_t d = 0; d < parts[i].dim(); ++d) {
      region = region.narrow(d, 0, parts[i].size(d));
      valid_region = valid_region.narrow(d, 0, parts[i].size(d));
    }
    region.copy_(parts[i]);
    valid_region.fill_(true);
  }
  return {padded, valid};
}

}  // namespace

TEST_CASE("a nested tensor leaf has -1 in its ragged dims, and a batch size may hold it") {
  const auto parts = components();
  TensorDict td({{"nested", nested(parts)}}, {2, 3, -1});
  REQUIRE(td.batch_size() == at::IntArrayRef({2, 3, -1}));
  REQUIRE(td.get("nested").is_nested());
  REQUIRE(at::equal(td.get("nested").unbind(0)[1], parts[1]));
  // tensordict 0.15.3 on the same nested tensor (run in the test venv)
  CHECK(repr(td) == "TensorDict(batch_size=[2,3,-1], fields={nested: f32[5]})");
  CHECK(repr(TensorDict({{"nested", nested(parts)}}, {2})) == "TensorDict(batch_size=[2], fields={nested: f32[3,-1,5]})");
  {
    set_printoptions detailed({.compact = false});
    REQUIRE_THAT(repr(td), Contains("nested: Tensor(shape=torch.Size([2, 3, -1, 5]), device=cpu, dtype=torch.float32"));
    REQUIRE_THAT(repr(td), Contains("batch_size=torch.Size([2, 3, -1])"));
  }

  // Inferred batch sizes see the ragged dim as -1 too.
  REQUIRE(make_tensordict({{"nested", nested(parts)}}, std::nullopt, std::nullopt, 3).batch_size() ==
          at::IntArrayRef({2, 3, -1}));

  SECTION("a dense tensor cannot sit over a ragged batch dim") {
    REQUIRE_THAT(TD_MESSAGE(td.set("dense", at::zeros({2, 3, 6}))),
                 Contains("key 'dense': the tensor's shape [2, 3, 6] does not start with the batch size [2, 3, -1]"));
  }
  SECTION("a nested leaf that does not fit names its ragged shape") {
    TensorDict other({}, {2, 4});
    REQUIRE_THAT(TD_MESSAGE(other.set("nested", nested(parts))),
                 Contains("the tensor's shape [2, 3, -1, 5] does not start with the batch size [2, 4]"));
  }
}

TEST_CASE("to_padded_tensor pads nested leaves and infers the ragged batch dim") {
  const auto parts = components();
  const auto [expected, valid] = padded_by_hand(parts, {2, 3, 6, 5}, -1.0);
  TensorDict td({{"nested", nested(parts)}, {"sub", TensorDict({{"nested", nested(parts)}}, {2, 3, -1})}}, {2, 3, -1});

  TensorDict padded = td.to_padded_tensor(-1.0);
  REQUIRE(padded.batch_size() == at::IntArrayRef({2, 3, 6}));
  REQUIRE_FALSE(padded.get("nested").is_nested());
  REQUIRE(at::equal(padded.get("nested"), expected));
  REQUIRE(at::equal(padded.get({"sub", "nested"}), expected));
  // The nested level's batch is inferred with as many dims as ours at most
  // (tensordict 0.15.3's auto_batch_size_(batch_dims) bounds every level).
  REQUIRE(padded.get_td("sub").batch_size() == at::IntArrayRef({2, 3, 6}));
  REQUIRE_FALSE(padded.contains("mask"));

  SECTION("mask_key receives where the data is, over the batch dims") {
    TensorDict masked = td.to_padded_tensor(0.0, NestedKey("mask"));
    // The leaf has one more dim than the batch: a position is valid where its last element is.
    const at::Tensor expected_mask = valid.select(-1, -1);
    REQUIRE(at::equal(masked.get("mask"), expected_mask));
    REQUIRE((masked.get("nested").index({masked.get("mask")}) != 0).all().item<bool>());
  }
  SECTION("the ragged dim may be the leaf's last batch dim") {
    const std::vector<at::Tensor> rows = {iota({3, 5}), iota({4, 5}) + 7};
    const auto [rows_padded, rows_valid] = padded_by_hand(rows, {2, 4, 5}, 0.0);
    TensorDict seq({{"x", nested(rows)}}, {2, -1});
    TensorDict out = seq.to_padded_tensor(0.0, NestedKey({"meta", "valid"}));
    REQUIRE(out.batch_size() == at::IntArrayRef({2, 4}));
    REQUIRE(at::equal(out.get("x"), rows_padded));
    REQUIRE(at::equal(out.get({"meta", "valid"}), rows_valid.select(-1, -1)));
  }
}

TEST_CASE("to_padded_tensor without a ragged batch dim keeps the batch size and carries other leaves") {
  const auto parts = components();
  const auto [expected, valid] = padded_by_hand(parts, {2, 3, 6, 5}, 0.5);
  TensorDict td({{"nested", nested(parts)}, {"dense", iota({2, 7})}}, {2});
  td.set_non_tensor("label", Json("episode"));

  TensorDict padded = td.to_padded_tensor(0.5);
  REQUIRE(padded.batch_size() == at::IntArrayRef({2}));
  REQUIRE(at::equal(padded.get("nested"), expected));
  REQUIRE(at::equal(padded.get("dense"), iota({2, 7})));
  REQUIRE(padded.get_non_tensor("label") == Json("episode"));
}

TEST_CASE("to_padded_tensor refuses a mask it cannot build") {
  SECTION("no ragged batch dim") {
    TensorDict td({{"nested", nested(components())}}, {2});
    REQUIRE_THAT(TD_MESSAGE(td.to_padded_tensor(0.0, NestedKey("mask"))),
                 Contains("to_padded_tensor: mask_key 'mask' needs a ragged (-1) dim in the batch size, which is [2]"));
  }
  SECTION("no nested leaf to take it from") {
    TensorDict td({}, {2, -1});
    REQUIRE_THAT(TD_MESSAGE(td.to_padded_tensor(0.0, NestedKey("mask"))),
                 Contains("to_padded_tensor: mask_key 'mask' was given but no leaf is a nested tensor"));
  }
}
