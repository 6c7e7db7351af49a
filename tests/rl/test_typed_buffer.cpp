// ReplayBuffer<Step>: a generated tensorclass (rl_step.yaml) as the element:
// its rows are stored and sampled as Step, and its checkpoint's storage is
// in tensorclass layout (meta.json names the Python class rlt.Step).
#include <fstream>
#include <nlohmann/json.hpp>

#include "rl_helpers.h"
#include "rl_step.tc.h"

using namespace tensordict;
using rlt::Next;
using rlt::Step;
using td_test::TempDir;
namespace fs = std::filesystem;

namespace {

// n steps numbered from `first`, obs = id in every column, reward -id, task "task<id % 3>".
Step steps(int64_t first, int64_t n) {
  const at::Tensor id = at::arange(first, first + n, at::kFloat).unsqueeze(1);
  std::vector<std::string> tasks;
  for (int64_t i = first; i < first + n; ++i) tasks.push_back("task" + std::to_string(i % 3));
  return Step({.obs = id.repeat({1, 3}),
               .action = id * 0.5,
               .next = Next({.obs = id.repeat({1, 3}) + 1, .reward = -id, .done = id > 4}, {n}),
               .task = NonTensorStack<std::string>::stack(tasks, {n})},
              {n});
}

at::Tensor ids_of(const Step& s) { return s.obs.select(1, 0).to(at::kLong); }

}  // namespace

TEST_CASE("rl: a generated tensorclass is the buffer's element: extend, add and sample Steps") {
  rl::ReplayBuffer<Step> rb(rl::LazyMemmapStorage(6), {.seed = 0});
  rb.extend(steps(0, 4));
  rb.add(steps(4, 1).index({0}));
  CHECK((rb.size() == 5 && rb.cursor() == 5 && rb.write_count() == 5));
  auto [batch, index] = rb.sample_with_index(32);
  static_assert(std::is_same_v<decltype(batch), Step>);
  CHECK(batch.batch_size().vec() == std::vector<int64_t>{32});
  CHECK(at::equal(ids_of(batch), index));
  CHECK(at::equal(batch.next.reward.squeeze(1), -index.to(at::kFloat)));
  CHECK(at::equal(batch.next.done.squeeze(1), index > 4));
  // The non-tensor field comes with its rows.
  const auto tasks = batch.task.tolist(batch.batch_size());
  for (int64_t i = 0; i < 32; ++i) CHECK(tasks[i] == "task" + std::to_string(index[i].item<int64_t>() % 3));
}

TEST_CASE("rl: a typed buffer's checkpoint is in tensorclass layout and loads back as Steps") {
  TempDir dir;
  const fs::path ckpt = dir / "ckpt";
  rl::ReplayBuffer<Step> rb(rl::LazyMemmapStorage(4, {.scratch_dir = (dir / "scratch").string()}));
  rb.extend(steps(0, 3));
  rb.dumps(ckpt.string());
  std::ifstream meta(ckpt / "storage" / "meta.json");
  const std::string text(std::istreambuf_iterator<char>(meta), {});
  CHECK_THAT(text, Catch::Contains("rlt.Step"));
  const Step loaded_tree = Step::load_memmap((ckpt / "storage").string());
  CHECK(loaded_tree.batch_size().vec() == std::vector<int64_t>{4});

  rl::ReplayBuffer<Step> back(rl::LazyMemmapStorage(4));
  back.loads(ckpt.string());
  CHECK((back.size() == 3 && back.cursor() == 3 && back.write_count() == 3));
  auto [batch, index] = back.sample_with_index(16);
  CHECK(at::equal(ids_of(batch), index));
  const auto tasks = batch.task.tolist(batch.batch_size());
  for (int64_t i = 0; i < 16; ++i) CHECK(tasks[i] == "task" + std::to_string(index[i].item<int64_t>() % 3));
}
