// The C++ side of run_torchrl.py: writes replay-buffer checkpoints for real
// TorchRL to load, and loads the ones TorchRL wrote.
//
//   rl_tool dump <dir> plain|typed     a buffer of known rows (below), dumped
//   rl_tool load <dir> plain|typed <max_size>
//                                      loads, samples, prints what it holds as JSON
//
// Rows are numbered: row `id` has obs = [id, id, id], ("next", "reward") =
// -id, ("next", "done") = id > 4, action = id / 2, task "swing".
// plain: ReplayBuffer(LazyMemmapStorage(10), seed 5, batch size 4), rows 0-5
// then 6-12 (it wraps: slots 0-2 hold 10-12). typed: ReplayBuffer<Step>
// (LazyMemmapStorage(8)), rows 0-4.
#include <tensordict/rl.h>
#include <nlohmann/json.hpp>
#include <tensordict/tensordict.h>

#include <iostream>
#include <string>

#include "rl_step.tc.h"

using namespace tensordict;

namespace {

at::Tensor ids(int64_t first, int64_t n) { return at::arange(first, first + n, at::kFloat).unsqueeze(1); }

TensorDict plain_rows(int64_t first, int64_t n) {
  const at::Tensor id = ids(first, n);
  TensorDict td({{"obs", id.repeat({1, 3})},
                 {"action", id * 0.5},
                 {NestedKey({"next", "reward"}), -id},
                 {NestedKey({"next", "done"}), id > 4}},
                {n});
  td.set_non_tensor("task", "swing");
  return td;
}

rlt::Step typed_rows(int64_t first, int64_t n) {
  const at::Tensor id = ids(first, n);
  return rlt::Step({.obs = id.repeat({1, 3}),
                    .action = id * 0.5,
                    .next = rlt::Next({.obs = id.repeat({1, 3}) + 1, .reward = -id, .done = id > 4}, {n}),
                    .task = "swing"},
                   {n});
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// What a loaded buffer holds, and whether a sample's rows are the stored
// rows at its indices.
template <class Buffer>
Json describe(Buffer& rb, const TensorDict& storage, const TensorDict& sample, const at::Tensor& index) {
  const at::Tensor stored_ids = storage.get("obs").select(1, 0);
  const bool rows_match = at::equal(sample.get("obs"), storage.get("obs").index({index})) &&
                          at::equal(sample.get({"next", "reward"}), storage.get({"next", "reward"}).index({index})) &&
                          at::equal(sample.get({"next", "done"}), storage.get({"next", "done"}).index({index}));
  return Json{{"len", rb.size()},
              {"cursor", rb.cursor()},
              {"write_count", rb.write_count()},
              {"ids", to_vector(stored_ids)},
              {"rewards", to_vector(-storage.get({"next", "reward"}).squeeze(1))},
              {"done", to_vector(storage.get({"next", "done"}).squeeze(1))},
              {"task", sample.get_non_tensor("task")},
              {"sample_index", to_vector(index)},
              {"sample_rows_match", rows_match}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: rl_tool dump <dir> plain|typed | rl_tool load <dir> plain|typed <max_size>";
  if (argc < 4) {
    std::cerr << usage << "\n";
    return 2;
  }
  const std::string command = argv[1], dir = argv[2], kind = argv[3];
  try {
    if (command == "dump" && kind == "plain") {
      rl::ReplayBuffer rb(rl::LazyMemmapStorage(10), {.seed = 5, .batch_size = 4});
      rb.extend(plain_rows(0, 6));
      rb.extend(plain_rows(6, 7));
      rb.dumps(dir);
    } else if (command == "dump" && kind == "typed") {
      rl::ReplayBuffer<rlt::Step> rb(rl::LazyMemmapStorage(8));
      rb.extend(typed_rows(0, 5));
      rb.dumps(dir);
    } else if (command == "load" && argc == 5 && kind == "plain") {
      rl::ReplayBuffer rb(rl::LazyMemmapStorage(std::stoll(argv[4])));
      rb.loads(dir);
      auto [sample, index] = rb.sample_with_index(rb.size() > 0 ? 4 : 1);
      std::cout << describe(rb, rb.storage().tensordict(), sample, index).dump() << "\n";
    } else if (command == "load" && argc == 5 && kind == "typed") {
      rl::ReplayBuffer<rlt::Step> rb(rl::LazyMemmapStorage(std::stoll(argv[4])));
      rb.loads(dir);
      auto [sample, index] = rb.sample_with_index(4);
      std::cout << describe(rb, rb.storage().tensordict(), sample.tensordict(), index).dump() << "\n";
    } else {
      std::cerr << usage << "\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "rl_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
