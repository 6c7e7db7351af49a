// all_reduce and reduce in tensordict's protocol against Python ranks.
// Scenario "reduce KIND MODE": every rank holds make(KIND, rank + 1); where
// the result lands, each leaf must be the sum of that leaf over ranks.
// MODE: all, all_bucket (bucket_bytes 8), all_async, reduce (to rank 0),
// reduce_bucket.
#include <fmt/format.h>

#include "mixed_rank.h"
#include "samples.h"

namespace {

namespace td = tensordict;

// `got`'s tensor leaves against the sum of `terms`' (a lazy stack member by member).
void expect_sum(const td::TensorDict& got, const std::vector<td::TensorDict>& terms, const std::string& what) {
  if (got.kind() == td::Kind::LazyStack) {
    const auto members = td::LazyStackedTensorDict(got).tensordicts();
    for (std::size_t i = 0; i < members.size(); ++i) {
      std::vector<td::TensorDict> term_members;
      for (const auto& t : terms) term_members.push_back(td::LazyStackedTensorDict(t).tensordicts().at(i));
      expect_sum(members[i], term_members, fmt::format("{} [{}]", what, i));
    }
    return;
  }
  for (const auto& [key, value] : got.items()) {
    const std::string where = fmt::format("{}: key {}", what, key.repr());
    if (value.is_tensordict()) {
      std::vector<td::TensorDict> nested;
      for (const auto& t : terms) nested.push_back(t.get_td(key));
      expect_sum(value.tensordict(), nested, where);
    } else if (value.is_tensor()) {
      at::Tensor want = terms.front().get(key).clone();
      for (std::size_t i = 1; i < terms.size(); ++i) want += terms[i].get(key);
      mixed::expect_equal(value.tensor(), want, where);
    }
  }
}

td::ReduceOpOptions options_of(const std::string& mode) {
  if (mode == "all" || mode == "reduce") return {};
  if (mode == "all_bucket" || mode == "reduce_bucket") return {.bucket_bytes = 8};
  if (mode == "all_async") return {.async_op = true};
  throw std::invalid_argument("no mode '" + mode + "'");
}

mixed::Register reduce("reduce", [](const mixed::Rank& r) {
  const std::string& kind = r.args.at(0);
  const std::string& mode = r.args.at(1);
  td::TensorDict mine = mixed::make(kind, r.rank + 1);
  if (mode.starts_with("all")) {
    td::Work work = td::all_reduce(mine, r.group, options_of(mode));
    work.wait();
  } else {
    td::reduce(mine, r.group, 0, options_of(mode));
    if (r.rank != 0) return;  // the other ranks' values are not defined
  }
  std::vector<td::TensorDict> terms;
  for (int v = 1; v <= r.world; ++v) terms.push_back(mixed::make(kind, v));
  expect_sum(mine, terms, fmt::format("{} {}: the sum", kind, mode));
});

}  // namespace
