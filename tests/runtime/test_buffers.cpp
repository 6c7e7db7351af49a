// copy_, copy_at_, replace, separates, non_tensor_items,
// filter_non_tensor_data, auto_device_, record_stream: expected values are
// tensordict 0.15.3's on the same data.
#include "helpers.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace td_test;

namespace {

// a [3]; n.c [3]; m.d, m.e [3]; s and m.t non-tensor; batch [3].
TensorDict tree() {
  TensorDict td({{"a", at::zeros({3})},
                 {"n", TensorDict({{"c", at::ones({3})}}, {3})},
                 {"m", TensorDict({{"d", at::ones({3})}, {"e", at::zeros({3})}}, {3})}},
                {3});
  td.set_non_tensor("s", "text");
  td.set_non_tensor({"m", "t"}, "tt");
  return td;
}
std::vector<NestedKey> sorted_keys(const TensorDict& td) {
  auto keys = td.keys({.include_nested = true});
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

TEST_CASE("copy_ and copy_at_ write into the existing tensors", "[buffers]") {
  TensorDict td = tree().filter_non_tensor_data();
  const void* storage = td.get("a").data_ptr();
  td.copy_(TensorDict({{"a", at::full({3}, 2.f)}}, {3}));
  CHECK(td.get("a").data_ptr() == storage);
  CHECK(at::equal(td.get("a"), at::full({3}, 2.f)));
  td.copy_at_(TensorDict({{"a", at::scalar_tensor(7.f)}, {"n", TensorDict({{"c", at::scalar_tensor(9.f)}})}}), {1});
  CHECK(at::equal(td.get("a"), at::tensor({2.f, 7.f, 2.f})));
  CHECK(at::equal(td.get({"n", "c"}), at::tensor({1.f, 9.f, 1.f})));
  // Every key must exist.
  CHECK_THROWS_AS(td.copy_(TensorDict({{"zz", at::zeros({3})}}, {3})), KeyError);
}

TEST_CASE("replace: a shallow copy with entries written, the tensordict unchanged", "[buffers]") {
  const TensorDict td = tree();
  const TensorDict r = td.replace(TensorDict({{{"m", "d"}, at::full({3}, 5.f)}}, {3}));
  CHECK(at::equal(r.get({"m", "d"}), at::full({3}, 5.f)));
  CHECK(at::equal(td.get({"m", "d"}), at::ones({3})));
  CHECK(r.get({"m", "e"}).is_same(td.get({"m", "e"})));
  CHECK(r.get("a").is_same(td.get("a")));
  CHECK(td.replace(TensorDict()).impl() == td.impl());
}

TEST_CASE("separates removes entries and returns them (tensordict's separates)", "[buffers]") {
  TensorDict td = tree();
  const TensorDict out = td.separates({{"n", "c"}, "a"});
  CHECK(sorted_keys(out) == std::vector<NestedKey>{"a", "n", {"n", "c"}});
  CHECK(out.batch_size() == at::IntArrayRef{3});
  // "n" was left empty: removed, as tensordict's filter_empty=True.
  CHECK(sorted_keys(td) == std::vector<NestedKey>{"m", {"m", "d"}, {"m", "e"}, {"m", "t"}, "s"});
  TensorDict keep = tree();
  keep.separates({{"n", "c"}}, {.keep_empty = true});
  CHECK(keep.contains("n"));
  CHECK(keep.get_td("n").keys().empty());
  // A missing key: KeyError, nothing removed; strict=false skips it.
  TensorDict strict = tree();
  CHECK_THROWS_AS(strict.separates({"a", "zz"}), KeyError);
  CHECK(strict.contains("a"));
  TensorDict lenient = tree();
  CHECK(sorted_keys(lenient.separates({"zz", "a"}, {.strict = false})) == std::vector<NestedKey>{"a"});
}

TEST_CASE("non_tensor_items and filter_non_tensor_data", "[buffers]") {
  const TensorDict td = tree();
  const auto top = td.non_tensor_items();
  REQUIRE(top.size() == 1);
  CHECK(top[0].first == NestedKey("s"));
  CHECK(top[0].second.data() == "text");
  const auto all = td.non_tensor_items({.include_nested = true});
  std::vector<NestedKey> keys;
  for (const auto& [key, data] : all) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<NestedKey>{{"m", "t"}, "s"});
  const TensorDict tensors = td.filter_non_tensor_data();
  CHECK(sorted_keys(tensors) == std::vector<NestedKey>{"a", "m", {"m", "d"}, {"m", "e"}, "n", {"n", "c"}});
  CHECK(tensors.get("a").is_same(td.get("a")));
}

TEST_CASE("auto_device_ takes the leaves' common device, record_stream needs CUDA leaves", "[buffers]") {
  TensorDict td = tree();
  CHECK(!td.device());
  td.auto_device_();
  REQUIRE(td.device());
  CHECK(*td.device() == at::Device(at::kCPU));
  CHECK(td.get_td("n").device() == td.device());
  // Leaves on several devices: no device.
  TensorDict mixed({{"a", at::zeros({3})}, {"b", at::zeros({3}, at::TensorOptions().device(at::kMeta))}}, {3});
  mixed.auto_device_();
  CHECK(!mixed.device());
  if (!at::hasCUDA()) {
    // libtorch's own refusal, with the op and the key.
    CHECK_THROWS_WITH(TensorDict({{"a", at::zeros({3})}}).record_stream(c10::Stream(c10::Stream::DEFAULT, at::Device(at::kCPU))),
                      Catch::Matchers::Contains("record_stream") && Catch::Matchers::Contains("'a'"));
  } else {
    // CUDA leaves, nested too: every leaf is recorded on the stream.
    TensorDict on_gpu = tree().to(at::Device(at::kCUDA, 0));
    const c10::Stream stream(c10::Stream::DEFAULT, at::Device(at::kCUDA, 0));
    CHECK(on_gpu.record_stream(stream).impl() == on_gpu.impl());
    // A CPU leaf among CUDA ones: libtorch's refusal names it.
    TensorDict mixed_devices({{"g", at::zeros({3}, at::Device(at::kCUDA, 0))}, {"cpu_leaf", at::zeros({3})}}, {3});
    CHECK_THROWS_WITH(mixed_devices.record_stream(stream), Catch::Matchers::Contains("'cpu_leaf'"));
  }
}
