// Key access on the dynamic TensorDict (absolute targets, see docs/benchmarks.md).
#include <tensordict/tensordict.h>

#include "bench_common.h"

using tensordict::NestedKey;
using tensordict::TensorDict;

namespace {

// {"l0": {"l1": {"l2": {"l3": {"l4": leaf}}}}}, batch [64].
TensorDict deep() {
  TensorDict td({}, {bench::kBatch});
  td.set({"l0", "l1", "l2", "l3", "l4"}, at::zeros({bench::kBatch, bench::kFeature}));
  return td;
}

// 100 keys: 10 nested tensordicts of 9 leaves each (90 + 10 = 100 keys).
TensorDict hundred() {
  TensorDict td({}, {bench::kBatch});
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 9; ++j) td.set({std::string{'n', static_cast<char>('0' + i)}, std::string{'k', static_cast<char>('0' + j)}}, at::zeros({bench::kBatch}));
  }
  return td;
}

}  // namespace

int main(int argc, char** argv) {
  bench::steady_malloc();
  static TensorDict d = deep();
  static TensorDict h = hundred();
  static TensorDict flat({{"a", at::zeros({bench::kBatch})}, {"b", at::zeros({bench::kBatch})}}, {bench::kBatch});
  static const NestedKey key{"l0", "l1", "l2", "l3", "l4"};
  static const at::Tensor value = at::ones({bench::kBatch});

  // The key as a caller writes it (five short strings, built per call)...
  bench::add("get_nested5", "tensordict", [] { return d.get({"l0", "l1", "l2", "l3", "l4"}); });
  // ... and prebuilt.
  bench::add("get_nested5_prebuilt_key", "tensordict", [] { return d.get(key); });
  bench::add("set_existing", "tensordict", [] {
    flat.set("a", value);
    return 0;
  });
  bench::add("keys_nested_100", "tensordict", [] { return h.keys({.include_nested = true}); });
  return bench::run(argc, argv);
}
