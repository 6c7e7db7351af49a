// Dim names: construction, renaming, refining, propagation through every op.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using at::indexing::Ellipsis;
using at::indexing::None;
using at::indexing::Slice;

namespace {
TensorDict named() {
  return TensorDict({{"x", iota({2, 3, 4, 5})}, {"n", TensorDict({{"y", iota({2, 3, 4, 6})}}, {2, 3, 4, 6})}}, {2, 3, 4},
                    std::nullopt, {"a", "b", "c"});
}
#define REQUIRE_NAMES(td, ...) REQUIRE(((td).names() == Names{__VA_ARGS__}))
}  // namespace

TEST_CASE("nested tensordicts share the names of their parent's dims") {
  auto td = named();
  REQUIRE_NAMES(td.get_td("n"), "a", "b", "c", std::nullopt);
  td.set("m", TensorDict({{"z", at::zeros({2, 3, 4})}}, {2, 3, 4}));
  REQUIRE_NAMES(td.get_td("m"), "a", "b", "c");
  td.create_nested("e");
  REQUIRE_NAMES(td.get_td("e"), "a", "b", "c");
}

TEST_CASE("rename_, rename and refine_names") {
  auto td = named();
  td.rename_("b", "time");
  REQUIRE_NAMES(td, "a", "time", "c");
  REQUIRE_NAMES(td.get_td("n"), "a", "time", "c", std::nullopt);
  auto copy = td.rename(Names{std::nullopt, "x", std::nullopt});
  REQUIRE_NAMES(copy, std::nullopt, "x", std::nullopt);
  REQUIRE_NAMES(td, "a", "time", "c");
  REQUIRE_THAT(TD_MESSAGE(td.rename_("zzz", "q")), Contains("no dim is named 'zzz'") && Contains("['a', 'time', 'c']"));
  REQUIRE_THAT(TD_MESSAGE(td.rename_(Names{"a", "a", "c"})), Contains("Some dimension names are non-unique: ['a', 'a', 'c']."));
  REQUIRE_THAT(TD_MESSAGE(td.rename_(Names{"a"})), Contains("1 names for 3 batch dims"));

  TensorDict plain({{"x", at::zeros({2, 3, 4})}}, {2, 3, 4});
  plain.refine_names({"...", "last"});
  REQUIRE_NAMES(plain, std::nullopt, std::nullopt, "last");
  plain.refine_names({"first", "...", "last"});
  REQUIRE_NAMES(plain, "first", std::nullopt, "last");
  REQUIRE_THAT(TD_MESSAGE(plain.refine_names({"other", "...", "last"})), Contains("dim 0 is named 'first' and cannot be refined to 'other'"));
  REQUIRE_THAT(TD_MESSAGE(plain.refine_names({"...", "...", "x"})), Contains("at most one '...'"));
}

TEST_CASE("indexing keeps the names of kept dims") {
  auto td = named();
  REQUIRE_NAMES(td.index({0}), "b", "c");
  REQUIRE_NAMES(td.index({Slice(), 1}), "a", "c");
  REQUIRE_NAMES(td.index({Slice(0, 1), None}), "a", std::nullopt, "b", "c");
  REQUIRE_NAMES(td.index({mask({1, 0})}), std::nullopt, "b", "c");
  REQUIRE_NAMES(td.index({0}).get_td("n"), "b", "c", std::nullopt);
}

// Ports test_nameddims.py's advanced-index cases (base.py _get_names_idx): an
// integer index tensor keeps the indexed dim's name, once per dim it creates.
TEST_CASE("an index tensor keeps the name of the dim it indexes") {
  auto td = named();
  REQUIRE_NAMES(td.index({Slice(), at::tensor({0, 2}, at::kLong)}), "a", "b", "c");
  REQUIRE_NAMES(td.index({0, Ellipsis, at::tensor({-1}, at::kLong)}), "b", "c");
  REQUIRE_NAMES(td.index({Slice(), at::tensor({0, 1, 0, 1}, at::kLong).reshape({2, 2})}), "a", "b", "b", "c");
  REQUIRE_NAMES(td.index({Slice(), at::tensor({0, 2}, at::kLong)}).get_td("n"), "a", "b", "c", std::nullopt);
}

// Ports the batch_size setter's names rule (base.py): names extend with
// unnamed dims or lose their trailing ones.
TEST_CASE("setting the batch size extends or truncates names") {
  TensorDict td({{"x", iota({2, 3, 4})}}, {2, 3}, std::nullopt, {"a", "b"});
  td.set_batch_size({2, 3, 4});
  REQUIRE_NAMES(td, "a", "b", std::nullopt);
  td.set_batch_size({2});
  REQUIRE_NAMES(td, "a");
  td.set_batch_size({});
  REQUIRE_FALSE(td.has_names());
}

TEST_CASE("shape ops move, drop or add names as they move dims") {
  auto td = named();
  REQUIRE_NAMES(td.unsqueeze(1), "a", std::nullopt, "b", "c");
  REQUIRE_NAMES(td.unsqueeze(0).squeeze(0), "a", "b", "c");
  REQUIRE_NAMES(td.permute({2, 0, 1}), "c", "a", "b");
  REQUIRE_NAMES(td.permute({2, 0, 1}).get_td("n"), "c", "a", "b", std::nullopt);
  REQUIRE_NAMES(td.transpose(0, 2), "c", "b", "a");
  REQUIRE_NAMES(td.expand({7, 2, 3, 4}), std::nullopt, "a", "b", "c");
  REQUIRE_NAMES(td.unbind(1)[0], "a", "c");
  REQUIRE_NAMES(td.split(1, 2)[0], "a", "b", "c");
  REQUIRE_NAMES(td.chunk(2, 0)[1], "a", "b", "c");
  REQUIRE_NAMES(td.flatten(0, 1), std::nullopt, "c");
  REQUIRE_NAMES(td.unflatten(2, {2, 2}), "a", "b", std::nullopt, std::nullopt);
  REQUIRE_FALSE(td.reshape({6, 4}).has_names());
  REQUIRE_FALSE(td.view({-1}).has_names());
  REQUIRE_NAMES(td.clone(), "a", "b", "c");
  REQUIRE_NAMES(td.to(at::kDouble), "a", "b", "c");
  REQUIRE_NAMES(td.sum({1}), "a", "c");
  REQUIRE_NAMES(td.gather(1, at::zeros({2, 1, 4}, at::kLong)), "a", "b", "c");
}

// Ports test_nameddims.py's stack/cat cases (_torch_func.py: stack keeps
// names all members share, else none; cat takes the first member's).
TEST_CASE("stack keeps names the members share, cat takes the first's") {
  auto td = named();
  REQUIRE_NAMES(stack({td, td}, 1), "a", std::nullopt, "b", "c");
  REQUIRE_NAMES(cat({td, td}, 2), "a", "b", "c");
  auto other = td.rename("a", "z");
  REQUIRE_FALSE(stack({td, other}).has_names());
  REQUIRE(stack({td, other}).batch_size() == at::IntArrayRef{2, 2, 3, 4});
  REQUIRE_NAMES(cat({td, td.rename(Names{})}, 0), "a", "b", "c");
  REQUIRE_FALSE(cat({td.rename(Names{}), td}, 0).has_names());
}
