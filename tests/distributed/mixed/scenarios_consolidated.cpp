// tensordict's consolidated protocol against Python ranks: the object-list
// calls, init_remote / from_remote_init, broadcast, all_gather and
// gather_and_stack (mixed_rank.py has the same scenarios). Rank 0 sends:
// the line-ups "cpp,py" and "py,cpp" put each language in each role. Every
// expected value is computed here, the same way mixed_rank.py computes it.
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "distributed/object_lists.h"
#include "mixed_rank.h"
#include "tensordict/lazy.h"
#include "tensordict/tensordict.h"

namespace {

using tensordict::Json;
using tensordict::TensorDict;
namespace td = tensordict;

// mixed_rank.py's dense_sample(): nested, three dtypes, a non-tensor entry.
TensorDict dense_sample() {
  TensorDict out({{"obs", at::arange(12, at::kFloat).reshape({2, 6})},
                  {"nested", TensorDict({{"ids", at::arange(2, at::kLong)},
                                         {"flag", at::arange(2, at::kLong).eq(0)}},  // [True, False]
                                        {2})},
                  {"reward", at::tensor({0.5, -1.5}, at::kDouble).reshape({2, 1})}},
                 {2});
  out.set_non_tensor("label", Json("walk"));
  return out;
}

// mixed_rank.py's lazy_sample(): members whose "obs" differ in shape.
TensorDict lazy_sample() {
  return td::lazy_stack({TensorDict({{"obs", at::full({3}, 1.0)}}, {}), TensorDict({{"obs", at::full({5}, 2.0)}}, {})}, 0);
}

void expect_dense(const TensorDict& got, const std::string& what) {
  // tensordict's rebuild puts a level's non-tensor entries first, then its
  // leaves, then its nested levels: compare the keys as sets.
  auto sorted = [](std::vector<td::NestedKey> keys) {
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.repr() < b.repr(); });
    return keys;
  };
  mixed::expect(sorted(got.keys()) == sorted(dense_sample().keys()), what + ": keys");
  mixed::expect(got.batch_size() == std::vector<int64_t>{2}, what + ": batch size");
  const TensorDict want = dense_sample();
  for (const auto& key : want.keys({.include_nested = true, .leaves_only = true})) {
    if (want.get_value(key)->is_non_tensor()) {
      mixed::expect(got.get_non_tensor(key) == want.get_non_tensor(key), what + ": " + key.repr());
    } else {
      mixed::expect_equal(got.get(key), want.get(key), what + ": " + key.repr());
    }
  }
  mixed::expect(got.is_consolidated(), what + ": consolidated");
}

void expect_lazy(const TensorDict& got, const std::string& what) {
  mixed::expect(got.kind() == td::Kind::LazyStack, what + ": a lazy stack");
  const auto members = td::LazyStackedTensorDict(got).tensordicts();
  mixed::expect(members.size() == 2, what + ": two members");
  mixed::expect_equal(members[0].get("obs"), at::full({3}, 1.0), what + ": member 0");
  mixed::expect_equal(members[1].get("obs"), at::full({5}, 2.0), what + ": member 1");
}

// One per rank, in rank order: what all_gather and gather_and_stack send.
TensorDict rank_sample(int rank) {
  TensorDict out({{"a", at::full({3}, double(rank))},
                  {"n", TensorDict({{"x", at::arange(3, at::kLong) + rank}}, {3})}},
                 {3});
  return out;
}

mixed::Register object_lists("object_lists", [](const mixed::Rank& r) {
  const Json first = Json::parse(R"({"x": [1, 2.5, "three", null, true], "y": {"z": -7}})");
  if (r.rank == 0) {
    td::send_object_list({first, Json("second")}, r.group, 1);
  } else if (r.rank == 1) {
    std::vector<Json> got(2);
    mixed::expect(td::recv_object_list(got, r.group, 0) == 0, "recv_object_list returns the sender");
    mixed::expect(got[0] == first && got[1] == Json("second"), "recv_object_list: " + Json(got).dump());
  }
  std::vector<Json> list = r.rank == 0 ? std::vector<Json>{Json(42), Json{{"k", {1, 2}}}} : std::vector<Json>(2);
  td::broadcast_object_list(list, r.group, 0);
  mixed::expect(list[0] == Json(42) && list[1] == Json{{"k", {1, 2}}}, "broadcast_object_list: " + Json(list).dump());
  std::vector<Json> all(static_cast<std::size_t>(r.world));
  td::all_gather_object(all, Json::array({r.rank, std::string(static_cast<std::size_t>(r.rank) * 3, 'x')}), r.group);
  for (int i = 0; i < r.world; ++i) {
    mixed::expect(all[static_cast<std::size_t>(i)] == Json::array({i, std::string(static_cast<std::size_t>(i) * 3, 'x')}),
                  "all_gather_object of rank " + std::to_string(i));
  }
});

mixed::Register init_remote("init_remote", [](const mixed::Rank& r) {
  if (r.rank == 0) {
    for (int dst = 1; dst < r.world; ++dst) {
      td::init_remote(dense_sample(), r.group, dst);
      td::init_remote(lazy_sample(), r.group, dst);
    }
  } else {
    expect_dense(td::from_remote_init(r.group, 0), "from_remote_init");
    expect_lazy(td::from_remote_init(r.group, 0), "from_remote_init of a lazy stack");
  }
  // Then the same through broadcast (init_remote(use_broadcast=True)).
  if (r.rank == 0) {
    td::init_remote(dense_sample(), r.group, 0, {.use_broadcast = true});
  } else {
    expect_dense(td::from_remote_init(r.group, 0, {.use_broadcast = true}), "from_remote_init(use_broadcast)");
  }
});

mixed::Register broadcast("broadcast", [](const mixed::Rank& r) {
  const TensorDict got = td::broadcast(r.rank == 0 ? dense_sample() : TensorDict({}, {}), r.group, 0);
  expect_dense(got, "broadcast");
});

mixed::Register all_gather("all_gather", [](const mixed::Rank& r) {
  TensorDict mine = rank_sample(r.rank);
  if (r.rank == 1) mine.set("extra", at::arange(12, at::kInt).reshape({3, 4}));  // the structures may differ
  const auto all = td::all_gather(mine, r.group);
  mixed::expect(all.size() == static_cast<std::size_t>(r.world), "one per rank");
  for (int i = 0; i < r.world; ++i) {
    const TensorDict& got = all[static_cast<std::size_t>(i)];
    mixed::expect_equal(got.get("a"), rank_sample(i).get("a"), "a of rank " + std::to_string(i));
    mixed::expect_equal(got.get({"n", "x"}), rank_sample(i).get({"n", "x"}), "n.x of rank " + std::to_string(i));
    mixed::expect(got.contains(td::NestedKey("extra")) == (i == 1), "extra only from rank 1");
  }
});

mixed::Register gather_and_stack("gather_and_stack", [](const mixed::Rank& r) {
  if (r.rank == 0) {
    TensorDict out({{"a", at::zeros({r.world - 1, 3})},
                    {"n", TensorDict({{"x", at::zeros({r.world - 1, 3}, at::kLong)}}, {r.world - 1, 3})}},
                   {r.world - 1, 3});
    td::gather_and_stack(out, r.group, 0);
    for (int i = 1; i < r.world; ++i) {
      mixed::expect_equal(out.get("a").select(0, i - 1), rank_sample(i).get("a"), "a from rank " + std::to_string(i));
      mixed::expect_equal(out.get({"n", "x"}).select(0, i - 1), rank_sample(i).get({"n", "x"}),
                          "n.x from rank " + std::to_string(i));
    }
  } else {
    td::gather_and_stack(rank_sample(r.rank), r.group, 0);
  }
});

// Hostile peers: rank 0 sends, rank 1 (C++: run as "py,cpp" or "cpp,cpp")
// must fail with the call, the peer and the key, and the ranks stay in step.
mixed::Register hostile("hostile", [](const mixed::Rank& r) {
  const Json bad_leaf = Json::parse(R"({"cls": "TensorDict", "non_tensors": {}, "leaves":
    {"obs": ["torch.float32", [2, 4], 0, 32, 0]}, "cls_metadata": {"device": null, "names": [null],
    "batch_size": [2], "is_locked": false}, "_total_bytes": 16})");
  if (r.rank == 0) {
    std::vector<at::Tensor> storage{at::zeros({16}, at::kByte)};
    td::send_object_list({bad_leaf}, r.group, 1);
    r.group->send(storage, 1, 0)->wait();
    td::gather_and_stack(TensorDict({{"a", at::zeros({4})}}, {}), r.group, 1);
  } else if (r.rank == 1) {
    mixed::expect_error([&] { td::from_remote_init(r.group, 0); },
                        "malformed metadata (from_remote_init from rank 0): the top level: leaf 'obs' spans bytes "
                        "0..32, outside the file's 16 bytes of data",
                        "a leaf past the storage");
    TensorDict out({{"a", at::zeros({r.world - 1, 3})}}, {r.world - 1});
    mixed::expect_error([&] { td::gather_and_stack(out, r.group, 1); },
                        "gather_and_stack to rank 1: rank 0 sent Float [4] for key 'a', the destination holds rows "
                        "of Float [3]",
                        "a row of another shape");
  }
});

}  // namespace
