// Ports of tensordict's test_nameddims.py (TestNamedDims) and of
// test_generic.py::test_stack_names: dim names through reductions, batch-size
// changes, indexing, nesting, stacking and splitting.
#include "fixtures.h"

using namespace conformance;
using at::indexing::Ellipsis;
using at::indexing::None;
using at::indexing::Slice;
using tensordict::Names;

namespace {
TensorDict named(at::IntArrayRef batch, Names names) { return TensorDict({}, batch, std::nullopt, std::move(names)); }
#define CHECK_NAMES(td, ...) CHECK(((td).names() == Names{__VA_ARGS__}))
}  // namespace

TEST_CASE("all/any keep the other names (test_nameddims.py::test_all)", "[conformance][test_nameddims.py]") {
  const TensorDict td = named({3, 4, 1, 6}, {"a", "b", "c", "d"});
  CHECK_NAMES(td.all(2), "a", "b", "d");
  CHECK_NAMES(td.any(2), "a", "b", "d");
}

TEST_CASE("cat keeps names (test_nameddims.py::test_cat)", "[conformance][test_nameddims.py]") {
  const TensorDict plain = named({3, 4, 5, 6}, {});
  CHECK_FALSE(tensordict::cat({plain, plain}, -1).has_names());
  const TensorDict td = named({3, 4, 5, 6}, {"a", "b", "c", "d"});
  CHECK_NAMES(tensordict::cat({td, td}, -1), "a", "b", "c", "d");
}

TEST_CASE("batch size changes extend or truncate names (test_nameddims.py::test_change_batch_size)", "[conformance][test_nameddims.py]") {
  TensorDict td = named({3, 4, 1, 6}, {"a", "b", "c", "z"});
  td.set_batch_size({3, 4, 1, 6, 1});
  CHECK_NAMES(td, "a", "b", "c", "z", std::nullopt);
  td.set_batch_size({});
  CHECK(td.names().empty());
  td.set_batch_size({3, 4});
  CHECK_FALSE(td.has_names());
  td.rename_({"a", std::nullopt});
  td.set_batch_size({3});
  CHECK_NAMES(td, "a");
}

TEST_CASE("indexing keeps the names of indexed dims (test_nameddims.py::test_index)", "[conformance][test_nameddims.py]") {
  const TensorDict td = named({3, 4, 5, 6}, {"a", "b", "c", "d"});
  CHECK_NAMES(td.index({0}), "b", "c", "d");
  CHECK_NAMES(td.index({Slice(), 0}), "a", "c", "d");
  CHECK_NAMES(td.index({0, Slice()}), "b", "c", "d");
  CHECK_NAMES(td.index({0, Slice(None, 1)}), "b", "c", "d");
  CHECK_NAMES(td.index({Ellipsis, -1}), "a", "b", "c");
  CHECK_NAMES(td.index({0, Ellipsis, -1}), "b", "c");
  CHECK_NAMES(td.index({0, Ellipsis, at::tensor({-1}, at::kLong)}), "b", "c", "d");
  CHECK_NAMES(td.index({0, Ellipsis, at::scalar_tensor(-1, at::kLong)}), "b", "c");
  CHECK_NAMES(td.index({0, Ellipsis, Slice(None, -1)}), "b", "c", "d");
  CHECK_NAMES(td.index({Slice(None, 1), Ellipsis, Slice(None, -1)}), "a", "b", "c", "d");
  const TensorDict by_mask = td.index({at::ones({3}, at::kBool)});
  CHECK_NAMES(by_mask, std::nullopt, "b", "c", "d");
  const TensorDict by_mask2 = td.index({at::ones({3, 4}, at::kBool)});
  CHECK_NAMES(by_mask2, std::nullopt, "c", "d");
}

TEST_CASE("an index tensor with 2 dims repeats the name, over every fixture (test_methods.py::test_index_tensor_nd_names)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    Names names = {"a", "b", "c", "d"};
    try {
      td.refine_names(names);
    } catch (const std::exception&) {
      names = td.names();  // as the Python test: a kind that cannot be renamed keeps its names
    }
    const at::Tensor example = at::zeros({}).expand(td.batch_size());
    const at::Tensor index = at::tensor({0, 1, 2, 1, 2, 0, 2, 0, 1}, at::kLong).reshape({3, 3});
    const Names repeated = {names[0], names[1], names[1], names[2], names[3]};
    const TensorDict by_dim1 = td.index({Slice(), index});
    CHECK(by_dim1.batch_size() == example.index({Slice(), index}).sizes());
    if (td.has_names()) CHECK((by_dim1.names() == repeated));
    const TensorDict after_int = td.index({0, index});
    CHECK(after_int.batch_size() == example.index({0, index}).sizes());
    if (td.has_names()) CHECK((after_int.names() == Names{names[1], names[1], names[2], names[3]}));
    const TensorDict with_ellipsis = td.index({Ellipsis, index, Slice(), Slice()});
    CHECK(with_ellipsis.batch_size() == example.index({Ellipsis, index, Slice(), Slice()}).sizes());
    if (td.has_names()) CHECK((with_ellipsis.names() == repeated));
  });
}

TEST_CASE("setting a named tensordict names an unnamed parent (test_nameddims.py::test_set_item_populate_names)",
          "[conformance][test_nameddims.py]") {
  TensorDict td = named({3}, {});
  td.set("a", named({3, 4}, {"a", "b"}));
  CHECK_NAMES(td, "a");
  CHECK_NAMES(td.get_td("a"), "a", "b");
}

TEST_CASE("nested tensordicts take the parent's names (test_nameddims.py::test_nested)", "[conformance][test_nameddims.py]") {
  TensorDict td = named({3, 4, 1, 6}, {"a", "b", "c", "d"});
  td.set("a", named({3, 4, 1, 6}, {}));
  CHECK((td.get_td("a").names() == td.names()));
  TensorDict caller = named({3, 4, 1, 6}, {"x", std::nullopt, std::nullopt, std::nullopt});
  CHECK_THROWS_AS(td.set("b", caller), std::runtime_error);
  CHECK_NAMES(caller, "x", std::nullopt, std::nullopt, std::nullopt);  // the caller's tensordict is untouched
  TensorDict partial = named({3, 4, 1, 6}, {"a", std::nullopt, std::nullopt, std::nullopt});
  td.set("c", partial);
  CHECK_NAMES(td.get_td("c"), "a", "b", "c", "d");
  CHECK_NAMES(partial, "a", std::nullopt, std::nullopt, std::nullopt);
  TensorDict unnamed = named({3, 4, 1, 6}, {});
  unnamed.set("a", named({3, 4, 1, 6}, {}));
  unnamed.rename_({"a", "b", std::nullopt, std::nullopt});
  CHECK((unnamed.get_td("a").names() == unnamed.names()));
}

TEST_CASE("a nested tensordict keeps its own names through the parent's index (test_nameddims.py::test_nested_indexing)",
          "[conformance][test_nameddims.py]") {
  TensorDict td({{"", named({3, 4}, {"c", "d"})}}, {3}, std::nullopt, {"c"});
  CHECK_NAMES(td.index({0}).get_td(""), "d");
  CHECK_NAMES(td.get_td("").index({0}), "d");
}

TEST_CASE("stack names (test_generic.py::test_stack_names)", "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::zeros({3, 4})}}, {3, 4}, std::nullopt, {"first", "second"});
  CHECK_NAMES(tensordict::stack({td, td}, 0), std::nullopt, "first", "second");
  CHECK_NAMES(tensordict::stack({td, td}, 1), "first", std::nullopt, "second");
  CHECK_NAMES(tensordict::stack({td, td}, -1), "first", "second", std::nullopt);
  TensorDict copy = td.clone();
  copy.rename_({"first", "third"});
  const TensorDict mixed = tensordict::stack({td, copy}, 0);
  CHECK_FALSE(mixed.has_names());
  CHECK(mixed.batch_size() == at::IntArrayRef{2, 3, 4});
}

TEST_CASE("split keeps names (test_nameddims.py::test_split)", "[conformance][test_nameddims.py]") {
  TensorDict td = named({3, 4, 1, 6}, {"a", "b", "c", "d"});
  td.lock_();
  CHECK_NAMES(td.split(std::vector<int64_t>{3, 3}, -1)[1], "a", "b", "c", "d");
  CHECK_NAMES(td.split(std::vector<int64_t>{1, 3}, 1)[1], "a", "b", "c", "d");
}

TEST_CASE("squeeze drops the squeezed dim's name (test_nameddims.py::test_squeeze)", "[conformance][test_nameddims.py]") {
  CHECK_NAMES(named({3, 4, 5, 6}, {"a", "b", "c", "d"}).squeeze(0), "a", "b", "c", "d");
  CHECK_NAMES(named({3, 1, 5, 6}, {"a", "b", "c", "d"}).squeeze(1), "a", "c", "d");
}

TEST_CASE("to_h5 keeps the names in memory, the file stores none, as tensordict's h5 backend (test_nameddims.py::test_h5, "
          "test_h5_td)",
          "[conformance][test_nameddims.py]") {
  td_test::TempDir dir;
  const TensorDict td({{"a", at::zeros({3, 4, 1, 6})}}, {3, 4, 1, 6}, std::nullopt, {"a", "b", "c", "d"});
  auto tdm = td.to_h5((dir / "file.h5").string());
  CHECK_NAMES(tdm, "a", "b", "c", "d");
  CHECK_NAMES(tdm.rename("c", "g"), "a", "b", "g", "d");
  CHECK_NAMES(tdm, "a", "b", "c", "d");
  tdm.rename_("c", "g");
  CHECK_NAMES(tdm, "a", "b", "g", "d");
  tdm.close();
  const auto reopened = tensordict::PersistentTensorDict::from_h5((dir / "file.h5").string());
  CHECK_FALSE(reopened.names()[0].has_value());
}
