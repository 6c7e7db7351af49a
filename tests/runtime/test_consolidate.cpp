// consolidate(), is_consolidated(), consolidated_storage(), and the device
// moves that use one storage: to(device, non_blocking), pin_memory(). The CPU
// cases run everywhere; the [cuda] cases return early without a GPU.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>
#include <torch/nested.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "helpers.h"
#include "persist_helpers.h"

using Catch::Matchers::Contains;
using tensordict::ConsolidateOptions;
using tensordict::NestedKey;
using tensordict::TensorDict;
using namespace td_test;

namespace {

// Leaves of four dtypes (one of them 1 byte wide with an odd size, so padding
// matters), a non-contiguous one, two nested levels and non-tensor data.
TensorDict mixed(int64_t batch = 3) {
  TensorDict td = sample({batch});
  td.set("odd", iota({batch, 5}, at::kByte));
  td.set("f64", iota({batch, 2}, at::kDouble) / 7);
  td.set("strided", iota({4, batch}).t());
  td.set({"nested", "deeper", "h"}, iota({batch, 3}, at::kHalf));
  td.set_non_tensor("task", "walk");
  td.set_non_tensor({"nested", "note"}, 42);
  return td;
}

std::vector<NestedKey> tensor_keys(const tensordict::TensorDict& td) {
  std::vector<NestedKey> out;
  for (auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) {
    if (value.is_tensor()) out.push_back(key);
  }
  return out;
}

// Byte range [begin, end) of `t`'s data.
std::pair<uintptr_t, uintptr_t> byte_range(const at::Tensor& t) {
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {begin, begin + static_cast<uintptr_t>(t.numel() * t.element_size())};
}

}  // namespace

TEST_CASE("consolidate copies every leaf into one storage and views it there", "[consolidate]") {
  const TensorDict td = mixed();
  const TensorDict c = td.consolidate();
  REQUIRE(c.is_consolidated());
  REQUIRE_FALSE(td.is_consolidated());
  REQUIRE_FALSE(td.consolidated_storage().has_value());
  require_same_entries(c, td);
  REQUIRE(c.get_non_tensor("task") == "walk");
  REQUIRE(c.get_non_tensor({"nested", "note"}) == 42);
  REQUIRE(c.get_td({"nested", "deeper"}).batch_size() == td.get_td({"nested", "deeper"}).batch_size());

  const at::Tensor storage = *c.consolidated_storage();
  REQUIRE(storage.scalar_type() == at::kByte);
  REQUIRE(storage.dim() == 1);
  REQUIRE(storage.device() == at::Device(at::kCPU));
  const auto [base, limit] = byte_range(storage);
  int64_t leaf_bytes = 0, padded_bytes = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const auto& key : tensor_keys(td)) {
    const at::Tensor leaf = c.get(key);
    INFO("key " << key.repr());
    REQUIRE(leaf.is_contiguous());
    REQUIRE(leaf.storage().unsafeGetStorageImpl() == storage.storage().unsafeGetStorageImpl());
    const auto range = byte_range(leaf);
    REQUIRE(range.first >= base);
    REQUIRE(range.second <= limit);
    REQUIRE((range.first - base) % 8 == 0);  // tensordict's 8-byte padding
    ranges.push_back(range);
    const int64_t n = leaf.numel() * leaf.element_size();
    leaf_bytes += n;
    padded_bytes += (n + 7) / 8 * 8;
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) REQUIRE(ranges[i].first >= ranges[i - 1].second);
  REQUIRE(storage.numel() >= leaf_bytes);
  REQUIRE(storage.numel() <= padded_bytes);
  // A copy: the original leaves are untouched by writes into the views.
  c.get("a").fill_(-1);
  REQUIRE(at::equal(td.get("a"), sample({3}).get("a")));
}

TEST_CASE("a consolidated tensordict is locked, in-place writes keep it consolidated, unlock_ ends it", "[consolidate]") {
  const TensorDict td = mixed();
  TensorDict c = td.consolidate();
  REQUIRE(c.is_locked());
  REQUIRE_THAT(TD_MESSAGE(c.set("new", at::zeros({3}))), Contains("Cannot modify locked TensorDict"));
  // set_() writes in place, into the storage (set() raises, as in tensordict).
  const at::Tensor fresh = iota({3, 4}) + 100;
  REQUIRE_THAT(TD_MESSAGE(c.set("a", fresh)), Contains("Cannot modify locked TensorDict"));
  c.set_("a", fresh);
  c.get({"nested", "c"}).mul_(2);
  REQUIRE(c.is_consolidated());
  REQUIRE(at::equal(c.get("a"), fresh));
  REQUIRE(at::equal(c.get({"nested", "c"}), td.get({"nested", "c"}) * 2));
  REQUIRE(c.consolidate().impl() == c.impl());  // already consolidated: itself

  c.unlock_();
  REQUIRE_FALSE(c.is_consolidated());
  REQUIRE_FALSE(c.consolidated_storage().has_value());
  c.set("new", at::zeros({3}));  // an ordinary tensordict again
  REQUIRE(c.consolidate().is_consolidated());
}

TEST_CASE("consolidate round trips: clone, contiguous and to(cpu) give back the original leaves", "[consolidate]") {
  const TensorDict td = mixed();
  const TensorDict c = td.consolidate();
  const TensorDict cloned(c.clone());
  REQUIRE_FALSE(cloned.is_consolidated());
  REQUIRE_FALSE(cloned.is_locked());
  require_same_entries(cloned, td);
  REQUIRE(cloned.get("a").data_ptr() != c.get("a").data_ptr());
  require_same_entries(c.contiguous(), td);
  // Its storage already on the CPU: tensordict 0.15.3 gives a device-less
  // consolidated tensordict the device in a new consolidated tensordict over
  // the same storage; one with the device is returned itself.
  const TensorDict placed(c.to(at::Device(at::kCPU)));
  REQUIRE(placed.impl() != c.impl());
  REQUIRE(placed.device() == at::Device(at::kCPU));
  REQUIRE(placed.is_consolidated());
  REQUIRE(placed.get("f64").data_ptr() == c.get("f64").data_ptr());
  require_same_entries(placed, td);
  const TensorDict same(placed.to(at::Device(at::kCPU)));
  REQUIRE(same.impl() == placed.impl());
  // Indexing gives views of the storage, but not a consolidated tensordict.
  const TensorDict first(c.index({0}));
  REQUIRE_FALSE(first.is_consolidated());
  REQUIRE(at::equal(first.get("f64"), td.get("f64")[0]));
}

TEST_CASE("consolidate of a lazy stack gives a lazy stack whose members view one storage",
          "[consolidate][test_lazy.py::TestLazyStackedTensorDict::test_consolidate]") {
  const auto lazy = tensordict::lazy_stack({sample({2}), sample({2}) + 1}, 0);
  const TensorDict c = lazy.consolidate();
  REQUIRE(c.is_consolidated());
  REQUIRE(c.kind() == Kind::LazyStack);
  require_same_entries(c, tensordict::stack({sample({2}), sample({2}) + 1}, 0));
  // Members of different shapes and keys, which no dense stack holds.
  const auto hetero = tensordict::lazy_stack({TensorDict({{"x", iota({2, 3})}}, {2}),
                                              TensorDict({{"x", iota({2, 5})}, {"y", iota({2}, at::kLong)}}, {2})},
                                             0);
  const TensorDict h = hetero.consolidate();
  REQUIRE(h.is_consolidated());
  REQUIRE(h.is_locked());
  const auto& members = tensordict::LazyStackedTensorDict(h).tensordicts();
  REQUIRE(at::equal(members[0].get("x"), iota({2, 3})));
  REQUIRE(at::equal(members[1].get("x"), iota({2, 5})));
  REQUIRE(at::equal(members[1].get("y"), iota({2}, at::kLong)));
  const at::Tensor storage = *h.consolidated_storage();
  for (const auto& t : {members[0].get("x"), members[1].get("x"), members[1].get("y")}) {
    REQUIRE(t.storage().unsafeGetStorageImpl() == storage.storage().unsafeGetStorageImpl());
  }
}

TEST_CASE("memmap of a consolidated tensordict writes a normal tree that loads back equal", "[consolidate]") {
  TempDir tmp;
  const TensorDict td = mixed();
  const TensorDict c = td.consolidate();
  const auto dir = (tmp / "td").string();
  c.memmap(dir);
  const TensorDict loaded = TensorDict::load_memmap(dir);
  require_same_entries(loaded, td);
  REQUIRE_FALSE(loaded.is_consolidated());
  // One file per leaf, each of the leaf's own size (not the whole storage).
  REQUIRE(fs::file_size(tmp / "td" / "odd.memmap") == 3 * 5);
  REQUIRE(fs::file_size(tmp / "td" / "nested" / "c.memmap") == 3 * 2 * 3 * 4);

  // memmap_ moves the leaves into files: no longer consolidated (tensordict).
  TensorDict in_place = td.consolidate();
  in_place.memmap_((tmp / "in_place").string());
  REQUIRE_FALSE(in_place.is_consolidated());
  require_same_entries(TensorDict::load_memmap((tmp / "in_place").string()), td);
}

TEST_CASE("consolidate refuses leaves that cannot be views of one storage, naming the key", "[consolidate]") {
  SECTION("a nested (jagged) tensor") {
    TensorDict td({{"x", at::ones({2})}}, {2});
    td.set({"deep", "ragged"}, torch::nested::nested_tensor(std::vector<at::Tensor>{at::ones({3}), at::ones({4})}));
    const auto message = TD_MESSAGE(td.consolidate());
    REQUIRE_THAT(message, Contains("consolidate failed for key ('deep', 'ragged')"));
    REQUIRE_THAT(message, Contains("a nested tensor cannot be consolidated"));
    REQUIRE_THAT(message, Contains("to_padded_tensor()"));
  }
  SECTION("a sparse tensor") {
    TensorDict td({{"s", at::eye(3).to_sparse()}}, {3});
    const auto message = TD_MESSAGE(td.consolidate());
    REQUIRE_THAT(message, Contains("consolidate failed for key 's'"));
    REQUIRE_THAT(message, Contains("a tensor of layout Sparse cannot be consolidated"));
    REQUIRE_THAT(message, Contains("to_dense()"));
  }
  SECTION("a quantized tensor") {
    TensorDict td({{"q", at::quantize_per_tensor(at::rand({3}), 0.1, 0, at::kQUInt8)}}, {3});
    const auto message = TD_MESSAGE(td.consolidate());
    REQUIRE_THAT(message, Contains("consolidate failed for key 'q'"));
    REQUIRE_THAT(message, Contains("a quantized tensor cannot be consolidated"));
  }
  SECTION("pin_memory with a storage on an accelerator") {
    const auto message = TD_MESSAGE(sample({2}).consolidate({.device = at::Device(at::kCUDA, 0), .pin_memory = true, .non_blocking = false}));
    REQUIRE_THAT(message, Contains("pin_memory=true pins a storage on the CPU, but the storage goes to cuda:0"));
  }
}

TEST_CASE("without an accelerator, pinning and moving say so", "[consolidate]") {
  if (at::hasCUDA()) {
    SUCCEED("an accelerator is present: pinning works (see the [cuda] cases)");
    return;
  }
  REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate({.device = std::nullopt, .pin_memory = true, .non_blocking = false})), Contains("pin_memory=true needs an accelerator"));
  REQUIRE_THAT(TD_MESSAGE(sample({2}).pin_memory()), Contains("pin_memory failed for key 'a'"));
  // A consolidated tensordict moves its storage: the error names it.
  REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate().to(at::Device(at::kCUDA, 0))),
               Contains("to failed for the storage its leaves share"));
}

TEST_CASE("synchronize and record_event on the CPU", "[consolidate]") {
  tensordict::synchronize(at::Device(at::kCPU));  // nothing to wait for
  const auto message = TD_MESSAGE(tensordict::record_event(at::Device(at::kCPU)));
  REQUIRE_THAT(message, Contains("record_event: the CPU has no stream to record on"));
}

// ---- on a GPU -------------------------------------------------------------------

namespace {

const at::Device kGpu(at::kCUDA, 0);

bool shares_one_storage(const tensordict::TensorDict& td) {
  const c10::StorageImpl* one = nullptr;
  for (const auto& key : tensor_keys(td)) {
    const auto* s = td.get(key).storage().unsafeGetStorageImpl();
    if (one && s != one) return false;
    one = s;
  }
  return true;
}

void require_on(const tensordict::TensorDict& td, at::Device device) {
  REQUIRE(td.device() == device);
  for (const auto& key : tensor_keys(td)) REQUIRE(td.get(key).device() == device);
}

bool all_pinned(const tensordict::TensorDict& td) {
  for (const auto& key : tensor_keys(td)) {
    if (!td.get(key).is_pinned()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("consolidated tensordicts move to the GPU and back as one storage", "[consolidate][cuda]") {
  if (!at::hasCUDA()) {
    SUCCEED("no CUDA device: run on a GPU machine");
    return;
  }
  const TensorDict td = mixed();
  for (bool pinned : {false, true}) {
    INFO("pinned storage: " << pinned);
    const TensorDict c = td.consolidate({.device = std::nullopt, .pin_memory = pinned, .non_blocking = false});
    REQUIRE(c.consolidated_storage()->is_pinned() == pinned);
    const TensorDict g(c.to(kGpu));
    REQUIRE(g.is_consolidated());
    REQUIRE(g.is_locked());
    REQUIRE(g.consolidated_storage()->device() == kGpu);
    require_on(g, kGpu);
    require_same_entries(g, td);

    const TensorDict back(g.to(at::Device(at::kCPU)));
    REQUIRE(back.is_consolidated());
    REQUIRE(back.consolidated_storage()->is_pinned());  // lands in pinned memory
    require_on(back, at::Device(at::kCPU));
    require_same_entries(back, td);

    const TensorDict async(c.to(kGpu, {.non_blocking = /*non_blocking=*/true}));
    tensordict::synchronize(kGpu);
    require_same_entries(async, td);
  }
  const TensorDict on_gpu = td.consolidate({.device = kGpu, .pin_memory = false, .non_blocking = false});
  REQUIRE(on_gpu.consolidated_storage()->device() == kGpu);
  require_same_entries(on_gpu, td);
}

TEST_CASE("tensordicts that are not consolidated move with one staging buffer and one synchronisation", "[consolidate][cuda]") {
  if (!at::hasCUDA()) {
    SUCCEED("no CUDA device: run on a GPU machine");
    return;
  }
  const TensorDict td = mixed();
  const TensorDict g(td.to(kGpu));  // pageable leaves: staged through pinned memory
  REQUIRE_FALSE(g.is_consolidated());
  REQUIRE_FALSE(g.is_locked());
  require_on(g, kGpu);
  require_same_entries(g, td);
  REQUIRE(shares_one_storage(g));
  REQUIRE(g.get("strided").strides() == td.get("strided").strides());  // dense leaves keep their strides

  const TensorDict back(g.to(at::Device(at::kCPU)));
  require_on(back, at::Device(at::kCPU));
  require_same_entries(back, td);
  REQUIRE(all_pinned(back));

  // non_blocking: wait on the GPU's stream before reading.
  const TensorDict async(td.to(kGpu, {.non_blocking = /*non_blocking=*/true}));
  const TensorDict async_back(async.to(at::Device(at::kCPU), {.non_blocking = /*non_blocking=*/true}));
  tensordict::record_event(kGpu).synchronize();
  require_same_entries(async_back, td);

  // pin_memory: one pinned allocation, then one copy to the GPU.
  const TensorDict pinned = td.pin_memory();
  REQUIRE(all_pinned(pinned));
  REQUIRE(shares_one_storage(pinned));
  require_same_entries(pinned, td);
  const TensorDict from_pinned(pinned.to(kGpu, {.non_blocking = /*non_blocking=*/true}));
  tensordict::synchronize(kGpu);
  require_same_entries(from_pinned, td);

  // Autograd leaves keep their graph (libtorch's per-leaf to).
  TensorDict grads({{"w", at::ones({3}).requires_grad_()}, {"x", at::ones({3})}}, {3});
  const TensorDict moved(grads.to(kGpu));
  REQUIRE(moved.get("w").requires_grad());
  REQUIRE(moved.get("w").grad_fn() != nullptr);
}
