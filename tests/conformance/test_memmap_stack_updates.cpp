// tensordict's test_nontensor.py::TestNonTensorData::test_memmap_stack_updates:
// a memory-mapped stack of non-tensor data updated through update(inplace=True),
// update_() and a single value; the files follow every write. C++ holds a
// NonTensorStack as an entry of a tensordict (here "data", batch [3, 2]), as
// tensordict does once it is nested.
#include "fixtures.h"

#include <nlohmann/json.hpp>

using namespace conformance;
using tensordict::Json;
using tensordict::NonTensorData;
using Catch::Matchers::Contains;

namespace {
// update()'s inplace=True.
tensordict::UpdateOptions in_place() {
  tensordict::UpdateOptions options;
  options.inplace = true;
  return options;
}

// {data: [[a, b]] * 3}, batch [3, 2].
TensorDict pairs(Json a, Json b) {
  return TensorDict({{"data", NonTensorData::stack({a, b, a, b, a, b}, {3, 2})}}, {3, 2});
}

Json rows(Json a, Json b) { return Json::array({Json::array({a, b}), Json::array({a, b}), Json::array({a, b})}); }
}  // namespace

TEST_CASE("update(inplace) and update_ of a memory-mapped non-tensor stack reach its files (test_nontensor.py::TestNonTensorData::test_memmap_stack_updates)",
          "[conformance][test_nontensor.py][ports:test_nontensor.py::TestNonTensorData::test_memmap_stack_updates]") {
  td_test::TempDir tmp;
  const std::string dir = (tmp / "stack").string();
  TensorDict data = pairs(0, 1).clone();
  data.memmap_(dir);
  CHECK(data.is_memmap());
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == data.get_non_tensor("data"));

  // A memory-mapped tensordict is locked: update() refuses, inplace writes.
  CHECK_THAT(CONF_MESSAGE(data.update(pairs(2, 3))), Contains("locked"));
  data.update(pairs(2, 3), in_place());
  CHECK(data.is_memmap());
  CHECK(data.get_non_tensor("data") == rows(2, 3));
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == rows(2, 3));

  // An element read by index is a copy (tensordict: a leaf that refuses
  // updates from a memmapped parent); writing it leaves the files alone.
  TensorDict element = data.index({0, 0});
  element.update(TensorDict({{"data", NonTensorData(Json(1))}}, {}), in_place());
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == rows(2, 3));

  data.update_(pairs(4, 5));
  CHECK(data.get_non_tensor("data") == rows(4, 5));
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == rows(4, 5));

  // One value for the whole batch. tensordict keeps a stack of sixes; here
  // a stack whose elements all agree is one value (docs/differences.md), on
  // disk too, and a memory-mapped single value refuses another one.
  data.update(TensorDict({{"data", NonTensorData(Json(6))}}, {3, 2}), in_place());
  CHECK(data.get_non_tensor("data") == Json(6));
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == Json(6));
  data.update_(TensorDict({{"data", NonTensorData(Json(6))}}, {3, 2}));
  CHECK(tensordict::load_memmap(dir).get_non_tensor("data") == Json(6));
  CHECK_THAT(CONF_MESSAGE(data.update_(TensorDict({{"data", NonTensorData(Json(7))}}, {3, 2}))),
             Contains("key 'data'") && Contains("shares its one value 6"));
}

TEST_CASE("update_ of non-tensor data needs a non-tensor entry there", "[conformance][errors]") {
  TensorDict td({{"data", at::zeros({3, 2})}}, {3, 2});
  CHECK_THAT(CONF_MESSAGE(td.update_(pairs(0, 1))),
             Contains("update_ failed for key 'data'") && Contains("holds a tensor there and the value non-tensor data"));
  CHECK_THROWS_AS(td.update_(pairs(0, 1)), tensordict::ValueError);
  CHECK_THAT(CONF_MESSAGE(TensorDict({}, {3, 2}).update_(pairs(0, 1))), Contains("data"));
}
