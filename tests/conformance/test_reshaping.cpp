// Ports of tensordict's tests of the batch-rearranging methods: movedim,
// swapaxes, narrow, broadcast_to, tensor_split, flip, roll, tile, repeat,
// repeat_interleave, flatten without batch dims. Each case names the Python
// test it ports; "over every fixture" cases run on all of tensordict's
// fixture kinds (fixtures.h).
#include "fixtures.h"

using namespace conformance;
using at::indexing::Slice;

namespace {

// The leaf at `key` of the result equals `expected(leaf of the source)`.
void leaf_is(const TensorDict& result, const TensorDict& source, const char* key,
             const std::function<at::Tensor(const at::Tensor&)>& expected) {
  INFO("key " << key);
  CHECK(same_tensor(result.get(key), expected(source.get(key))));
}

std::vector<int64_t> shape_of(const TensorDict& td) { return td.batch_size().vec(); }

// tensordict's test_generic fixtures: batch (4, 5, 6) and (2, 3).
TensorDict td456() {
  at::manual_seed(1);
  return TensorDict({{"a", at::randn({4, 5, 6, 9})}, {"b", at::randn({4, 5, 6, 7})}, {"c", at::randn({4, 5, 6})}}, {4, 5, 6});
}
TensorDict td23() {
  at::manual_seed(1);
  return TensorDict({{"a", at::randn({2, 3, 4})}, {"b", at::randn({2, 3})}}, {2, 3});
}

}  // namespace

TEST_CASE("movedim over every fixture (test_methods.py::test_movedim)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const auto moved = td.movedim(0, -1);
    CHECK(shape_of(moved) == std::vector<int64_t>{3, 2, 1, 4});
    for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) {
      if (!td.get_value(key)->is_tensor()) continue;
      INFO("key " << key);
      const at::Tensor original = td.get(key);
      std::vector<int64_t> order = {1, 2, 3, 0};
      for (int64_t d = 4; d < original.dim(); ++d) order.push_back(d);
      CHECK(same_tensor(moved.get(key), original.permute(order)));
    }
    CHECK(shape_of(td.movedim({0, 1}, {1, 0})) == std::vector<int64_t>{3, 4, 2, 1});
    CHECK_THROWS_AS(td.movedim(0, td.batch_dims() + 5), std::out_of_range);
    CHECK_THROWS_AS(td.movedim(td.batch_dims() + 5, 0), std::out_of_range);
  });
}

TEST_CASE("movedim matches torch.movedim (test_generic.py::test_movedim)", "[conformance][test_generic.py]") {
  const TensorDict td = td456();
  const auto moved = td.movedim(0, 2);
  CHECK(shape_of(moved) == std::vector<int64_t>{5, 6, 4});
  leaf_is(moved, td, "a", [](const at::Tensor& t) { return at::movedim(t, 0, 2); });
  CHECK(shape_of(td.movedim(-1, 0)) == std::vector<int64_t>{6, 4, 5});
  leaf_is(td.movedim(-1, 0), td, "c", [](const at::Tensor& t) { return at::movedim(t, -1, 0); });
  const auto tuple = td.movedim({0, 1}, {2, 0});
  CHECK(shape_of(tuple) == std::vector<int64_t>{5, 6, 4});
  leaf_is(tuple, td, "a", [](const at::Tensor& t) { return at::movedim(t, {0, 1}, {2, 0}); });
  CHECK(same_tensor(td.movedim(1, 1).get("a"), td.get("a")));
}

TEST_CASE("movedim errors (test_generic.py::test_movedim_exceptions)", "[conformance][test_generic.py]") {
  const TensorDict td = td456();
  CHECK(CONF_MESSAGE(td.movedim(0, 5)) ==
        "movedim: dim 5 is out of range for a tensordict with 3 batch dims (expected a dim in [-3, 2])");
  CHECK_THROWS_AS(td.movedim(5, 0), std::out_of_range);
  CHECK_THROWS_AS(td.movedim({0, 0}, {1, 2}), std::runtime_error);
  CHECK(CONF_MESSAGE(td.movedim({0, 0}, {1, 2})) == "movedim: repeated dim in source [0, 0]");
  CHECK(CONF_MESSAGE(td.movedim({0, 1}, {2, 2})) == "movedim: repeated dim in destination [2, 2]");
  CHECK_THROWS_AS(td.movedim({0}, {1, 2}), std::invalid_argument);
  CHECK(CONF_MESSAGE(td.movedim({0}, {1, 2})) == "movedim: source [0] and destination [1, 2] must have the same number of dims");
}

TEST_CASE("movedim after view and on a lazy stack (test_generic.py::test_movedim_with_tensordict_operations)",
          "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::randn({20, 6, 9})}, {"c", at::randn({20, 6})}}, {20, 6});
  CHECK(shape_of(td.view({4, 5, 6}).movedim(0, 2)) == std::vector<int64_t>{5, 6, 4});
  std::vector<TensorDict> parts;
  TensorDict base({{"a", at::randn({4, 5, 9})}, {"c", at::randn({4, 5})}}, {4, 5});
  for (int i = 0; i < 6; ++i) parts.push_back(base.clone());
  CHECK(shape_of(tensordict::lazy_stack(parts, 2).movedim(0, 2)) == std::vector<int64_t>{5, 6, 4});
}

TEST_CASE("swapaxes and swapdims (test_generic.py::test_swapaxes, test_methods.py::test_swapaxes)",
          "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td456();
  const auto swapped = td.swapaxes(0, 2);
  CHECK(shape_of(swapped) == std::vector<int64_t>{6, 5, 4});
  leaf_is(swapped, td, "a", [](const at::Tensor& t) { return at::swapaxes(t, 0, 2); });
  CHECK(shape_of(td.swapdims(0, 2)) == std::vector<int64_t>{6, 5, 4});
  CHECK(shape_of(td.swapaxes(-1, -3)) == std::vector<int64_t>{6, 5, 4});
  for_each_fixture([](const std::string&, TensorDict& f) {
    CHECK(shape_of(f.swapaxes(0, 1)) == std::vector<int64_t>{3, 4, 2, 1});
    CHECK(shape_of(f.swapdims(0, 1)) == std::vector<int64_t>{3, 4, 2, 1});
  });
}

TEST_CASE("flip (test_generic.py::test_flip, test_methods.py::test_flip)", "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td23();
  leaf_is(td.flip({0}), td, "b", [](const at::Tensor& t) { return t.flip({0}); });
  leaf_is(td.flip({0, 1}), td, "b", [](const at::Tensor& t) { return t.flip({0, 1}); });
  leaf_is(td.flip({0, 1}), td, "a", [](const at::Tensor& t) { return t.flip({0, 1}); });  // feature dim untouched
  leaf_is(td.flip({-1}), td, "b", [](const at::Tensor& t) { return t.flip({-1}); });
  CHECK(CONF_MESSAGE(td.flip({0, -2})) == "flip: dim -2 appears twice in [0, -2]");
  for_each_fixture([](const std::string&, TensorDict& f) {
    CHECK(shape_of(f.flip({0})) == shape_of(f));
    leaf_is(f.flip({0, 1}), f, "a", [](const at::Tensor& t) { return t.flip({0, 1}); });
  });
}

TEST_CASE("fliplr and flipud (test_generic.py::test_fliplr_flipud, test_methods.py::test_fliplr_flipud)",
          "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td23();
  leaf_is(td.fliplr(), td, "b", [](const at::Tensor& t) { return at::fliplr(t); });
  leaf_is(td.flipud(), td, "b", [](const at::Tensor& t) { return at::flipud(t); });
  const TensorDict one({{"a", at::randn({3})}}, {3});
  CHECK_THROWS_AS(one.fliplr(), std::runtime_error);
  CHECK(CONF_MESSAGE(one.fliplr()) == "fliplr: requires at least 2 batch dims, got 1");
  CHECK(CONF_MESSAGE(TensorDict().flipud()) == "flipud: requires at least 1 batch dim, got 0");
  for_each_fixture([](const std::string&, TensorDict& f) {
    CHECK(shape_of(f.fliplr()) == shape_of(f));
    CHECK(shape_of(f.flipud()) == shape_of(f));
  });
}

TEST_CASE("roll (test_generic.py::test_roll, test_methods.py::test_roll)", "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td23();
  leaf_is(td.roll(1, 0), td, "b", [](const at::Tensor& t) { return t.roll({1}, {0}); });
  leaf_is(td.roll({1, 2}, {0, 1}), td, "b", [](const at::Tensor& t) { return t.roll({1, 2}, {0, 1}); });
  leaf_is(td.roll(-1, 0), td, "a", [](const at::Tensor& t) { return t.roll({-1}, {0}); });
  CHECK(CONF_MESSAGE(td.roll({1, 2}, {0})) == "roll: got 2 shifts [1, 2] for 1 dims [0] (one shift per batch dim)");
  CHECK_THROWS_AS(td.roll(1, 2), std::out_of_range);
  for_each_fixture([](const std::string&, TensorDict& f) {
    CHECK(shape_of(f.roll(1, 0)) == shape_of(f));
    leaf_is(f.roll({1, 2}, {0, 1}), f, "c", [](const at::Tensor& t) { return t.roll({1, 2}, {0, 1}); });
  });
}

TEST_CASE("narrow (test_generic.py::test_narrow, test_methods.py::test_narrow)", "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td23();
  leaf_is(td.narrow(0, 0, 1), td, "b", [](const at::Tensor& t) { return t.narrow(0, 0, 1); });
  leaf_is(td.narrow(1, 1, 2), td, "a", [](const at::Tensor& t) { return t.narrow(1, 1, 2); });
  CHECK(shape_of(td.narrow(-1, 0, 2)) == std::vector<int64_t>{2, 2});
  // A view: writes reach the source.
  TensorDict source = td.clone();
  source.narrow(1, 1, 2).fill_("b", 7);
  CHECK(at::equal(source.get("b").index({Slice(), Slice(1, 3)}), at::full({2, 2}, 7.0)));
  CHECK(CONF_MESSAGE(td.narrow(1, 2, 2)) == "narrow: elements [2, 2 + 2) are outside batch dim 1 of size 3");
  for_each_fixture([](const std::string&, TensorDict& f) {
    CHECK(shape_of(f.narrow(0, 0, 1)) == std::vector<int64_t>{1, 3, 2, 1});
    CHECK(shape_of(f.narrow(1, 0, 2)) == std::vector<int64_t>{4, 2, 2, 1});
  });
}

TEST_CASE("tile (test_generic.py::test_tile, test_methods.py::test_tile)", "[conformance][test_generic.py][test_methods.py]") {
  const TensorDict td = td23();
  leaf_is(td.tile({2, 1}), td, "b", [](const at::Tensor& t) { return at::tile(t, {2, 1}); });
  leaf_is(td.tile({2, 2}), td, "b", [](const at::Tensor& t) { return at::tile(t, {2, 2}); });
  // Counts apply to batch dims only: "a"'s feature dim is not tiled.
  leaf_is(td.tile({2, 2}), td, "a", [](const at::Tensor& t) { return t.repeat({2, 2, 1}); });
  // Fewer counts: the last batch dims. More: new leading dims.
  CHECK(shape_of(td.tile({3})) == std::vector<int64_t>{2, 9});
  leaf_is(td.tile({2, 1, 1}), td, "b", [](const at::Tensor& t) { return at::tile(t, {2, 1, 1}); });
  CHECK(CONF_MESSAGE(td.tile({-1})) == "tile: negative count in [-1]");
  for_each_fixture([](const std::string& name, TensorDict& f) {
    if (name == "sub_td" || name == "sub_td2") return;  // skipped by tensordict too
    CHECK(shape_of(f.tile({2, 2, 2, 2})) == std::vector<int64_t>{8, 6, 4, 2});
  });
}

TEST_CASE("broadcast_to (test_generic.py::test_broadcast_to, test_methods.py::test_broadcast_to)",
          "[conformance][test_generic.py][test_methods.py]") {
  TensorDict td({{"a", at::randn({1, 3, 4})}, {"b", at::randn({1, 3})}}, {1, 3});
  td.rename_({"x", "y"});
  const TensorDict wide = td.broadcast_to({2, 3});
  CHECK(shape_of(wide) == std::vector<int64_t>{2, 3});
  leaf_is(wide, td, "a", [](const at::Tensor& t) { return t.broadcast_to({2, 3, 4}); });
  CHECK_FALSE(wide.has_names());  // broadcasting drops names, as in tensordict
  CHECK(shape_of(td.broadcast_to({5, 2, 3})) == std::vector<int64_t>{5, 2, 3});
  CHECK(CONF_MESSAGE(td.broadcast_to({2, 4})) == "broadcast_to: batch size [1, 3] cannot be expanded to [2, 4]");
  CHECK_THROWS_AS(td.broadcast_to({-1, 3}), std::runtime_error);
  for_each_fixture([](const std::string& name, TensorDict& f) {
    if (name == "sub_td" || name == "sub_td2") return;
    CHECK(shape_of(f.broadcast_to({4, 3, 2, 1})) == std::vector<int64_t>{4, 3, 2, 1});
    CHECK(shape_of(f.broadcast_to({2, 4, 3, 2, 1})) == std::vector<int64_t>{2, 4, 3, 2, 1});
  });
}

TEST_CASE("repeat over every fixture (test_methods.py::test_repeat)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    CHECK((td.repeat({1, 1, 1, 1}) == td).all());
    for (int64_t d = 0; d < 4; ++d) {
      std::vector<int64_t> reps(4, 1);
      reps[d] = 2;
      CHECK((td.repeat(reps) == tensordict::cat({td, td}, d)).all());
    }
  });
  const TensorDict td = td23();
  CHECK(CONF_MESSAGE(td.repeat({2})) ==
        "repeat: the number of repeat counts must match the number of batch dims of the tensordict: got [2] for 2 batch dims");
}

TEST_CASE("repeat_interleave over every fixture (test_methods.py::test_repeat_interleave)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    for (int64_t d : {0, 1, 2, 3, -1, -2, -3, -4}) {
      INFO("dim " << d);
      const TensorDict repeated = td.repeat_interleave(3, d);
      CHECK(repeated.batch_size() == at::empty(td.batch_size()).repeat_interleave(3, d).sizes());
      const int64_t wrapped = d < 0 ? d + 4 : d;
      CHECK(same_tensor(repeated.get("a"), td.get("a").repeat_interleave(3, wrapped)));
    }
    CHECK(td.repeat_interleave(3).batch_size() == at::empty(td.batch_size()).repeat_interleave(3).sizes());
  });
  const TensorDict td = td23();
  CHECK(CONF_MESSAGE(td.repeat_interleave(-1, 0)) == "repeat_interleave: repeats must be non-negative, got -1");
  CHECK(shape_of(TensorDict({{"x", at::tensor(1.0)}}, {}).repeat_interleave(2)) == std::vector<int64_t>{2});
}

TEST_CASE("repeat_interleave with a tensor of counts (test_methods.py::test_repeat_interleave_tensor)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const at::Tensor counts = at::tensor({3, 4, 5}, at::kLong);
    const TensorDict repeated = td.repeat_interleave(counts, 1);
    CHECK(repeated.batch_size() == at::empty(td.batch_size()).repeat_interleave(counts, 1).sizes());
    CHECK(same_tensor(repeated.get("a"), td.get("a").repeat_interleave(counts, 1)));
  });
  const TensorDict td = td23();
  CHECK(CONF_MESSAGE(td.repeat_interleave(at::tensor({1, 2}, at::kLong), 1)) ==
        "repeat_interleave: repeats must be one count or one per element of batch dim 1 (size 3), got shape [2]");
}

TEST_CASE("tensor_split over every fixture (test_methods.py::test_tensor_split)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const auto reference = at::zeros(td.batch_size());
    for (int64_t dim : {0, 1}) {
      const auto pieces = td.tensor_split({1, 3}, dim);
      const auto expected = at::tensor_split(reference, {1, 3}, dim);
      REQUIRE(pieces.size() == expected.size());
      for (std::size_t i = 0; i < pieces.size(); ++i) CHECK(pieces[i].batch_size() == expected[i].sizes());
      CHECK(same_tensor(pieces[1].get("a"), at::tensor_split(td.get("a"), {1, 3}, dim)[1]));
    }
    const auto sections = td.tensor_split(3, 0);
    const auto expected = at::tensor_split(reference, 3, 0);
    REQUIRE(sections.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(sections[i].batch_size() == expected[i].sizes());
  });
  CHECK(CONF_MESSAGE(td23().tensor_split(0)) == "tensor_split: number of sections must be greater than 0, but was 0");
}

TEST_CASE("shape ops keep names where tensordict does", "[conformance][test_methods.py]") {
  // Ports the names part of test_nameddims.py's shape cases for the new ops.
  TensorDict td = td23();
  td.rename_({"x", "y"});
  CHECK((td.movedim(0, 1).names() == tensordict::Names{"y", "x"}));
  CHECK((td.flip({0}).names() == tensordict::Names{"x", "y"}));
  CHECK((td.roll(1, 1).names() == tensordict::Names{"x", "y"}));
  CHECK((td.narrow(1, 0, 1).names() == tensordict::Names{"x", "y"}));
  CHECK((td.repeat({2, 1}).names() == tensordict::Names{"x", "y"}));
  CHECK((td.repeat_interleave(2, 1).names() == tensordict::Names{"x", "y"}));
  CHECK_FALSE(td.tile({2, 1}).has_names());
}

// Ports test_generic.py::TestGeneric::test_flatten_empty and test_flatten_00.
TEST_CASE(
    "flatten of a tensordict with no batch dims gives batch [1], as torch.flatten of a 0-dim tensor "
    "(test_generic.py::test_flatten_empty, test_flatten_00)",
    "[conformance][test_generic.py]") {
  const TensorDict td({{"a", at::arange(2.0)}}, {});
  for (const auto& [start, end] : std::vector<std::pair<int64_t, int64_t>>{{0, -1}, {0, 0}}) {
    const auto flat = td.flatten(start, end);
    REQUIRE(flat.batch_size() == at::IntArrayRef({1}));
    REQUIRE(at::equal(flat.get("a"), at::arange(2.0).unsqueeze(0)));
  }
  const TensorDict one({{"a", at::zeros({2})}}, {2});
  REQUIRE(one.flatten(0, 0).batch_size() == at::IntArrayRef({2}));
  REQUIRE(one.flatten(0, 0).get("a").sizes() == at::IntArrayRef({2}));
}
