// Device and dtype moves, clone, detach, contiguous, pin_memory.
#include <ATen/Context.h>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

TEST_CASE("to(dtype) casts every leaf") {
  auto td = sample({2});
  auto d = td.to(at::kDouble);
  for (const auto& [key, value] : d.items({.include_nested = true, .leaves_only = true})) {
    REQUIRE(value.tensor().scalar_type() == at::kDouble);
    REQUIRE(at::equal(value.tensor(), td.get(key).to(at::kDouble)));
  }
  REQUIRE(d.batch_size() == td.batch_size());
}

TEST_CASE("to(device) sets the device, setting a tensor moves it to the device") {
  auto td = sample({2}).to(at::Device(at::kCPU));
  REQUIRE(td.device() == at::Device(at::kCPU));
  REQUIRE(td.get_td("nested").device() == at::Device(at::kCPU));
  REQUIRE(td.cpu().device() == at::Device(at::kCPU));
  REQUIRE_FALSE(td.is_shared());
}

TEST_CASE("clone copies tensors, clone(false) copies only the structure") {
  auto td = sample({2});
  auto deep = td.clone();
  REQUIRE(deep.get("a").data_ptr() != td.get("a").data_ptr());
  REQUIRE(at::equal(deep.get("a"), td.get("a")));
  auto shallow = td.clone({.recurse = false});
  REQUIRE(shallow.get({"nested", "c"}).data_ptr() == td.get({"nested", "c"}).data_ptr());
  shallow.set({"nested", "only_shallow"}, at::zeros({2}));
  REQUIRE_FALSE(td.contains({"nested", "only_shallow"}));
}

TEST_CASE("detach and contiguous") {
  auto w = at::ones({2, 3}).requires_grad_();
  TensorDict td({{"w", w * 2}, {"t", iota({3, 2}).t()}}, {2});
  auto d = td.detach();
  REQUIRE(td.get("w").requires_grad());
  REQUIRE_FALSE(d.get("w").requires_grad());
  REQUIRE_FALSE(td.get("t").is_contiguous());
  auto c = td.contiguous();
  REQUIRE(c.get("t").is_contiguous());
  REQUIRE(at::equal(c.get("t"), td.get("t")));
}

TEST_CASE("CUDA moves and pinned memory", "[cuda]") {
  auto td = sample({2});
  if (!at::hasCUDA()) {
    // Without a GPU the error must still be clear and name the key.
    REQUIRE_THAT(TD_MESSAGE(td.cuda()), Contains("to failed for key 'a'"));
    SUCCEED("no CUDA device: the CUDA paths are exercised on a GPU machine");
    return;
  }
  auto g = td.cuda();
  REQUIRE(g.device() == at::Device(at::kCUDA, 0));
  REQUIRE(g.get({"nested", "c"}).is_cuda());
  REQUIRE(g.is_shared());
  REQUIRE(at::equal(g.cpu().get("a"), td.get("a")));
  auto nb = td.to(at::Device(at::kCUDA, 0), {.non_blocking = /*non_blocking=*/true});
  REQUIRE(at::equal(nb.cpu().get("b"), td.get("b")));
  auto pinned = td.pin_memory();
  REQUIRE(pinned.get("a").is_pinned());
  TensorDict on_gpu({}, {2}, at::Device(at::kCUDA, 0));
  on_gpu.set("x", at::zeros({2}));
  REQUIRE(on_gpu.get("x").is_cuda());
}
