// Concurrent reads: a locked TensorDict and a generated tensorclass read from
// 8 threads at once while other threads index, stack, clone and convert
// them. Run under ThreadSanitizer with `./dev tsan` (TENSORCLASS_SANITIZE=
// thread); in the normal suite it checks the results.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tensordict/tensordict.h"
// After the runtime's headers: since the merge of main, tensorclass.h uses
// NonTensorData without including non_tensor.h itself.
#include "rl.tc.h"

using namespace at::indexing;
using tensordict::TensorDict;

namespace {

constexpr int kReaders = 8;
constexpr int kWriters = 4;  // threads that index/stack (creating new objects)
constexpr int kRounds = 200;

at::Tensor iota(std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat) {
  return at::arange(c10::multiply_integers(shape), at::kLong).reshape(shape).to(dtype);
}

// Catch2's assertions are not thread-safe: threads check with this, and a
// failure counts (REQUIRE after the join).
void expect(bool ok) {
  if (!ok) throw std::runtime_error("check failed");
}

template <class Fn>
void run_threads(int n, Fn fn) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      try {
        fn(t);
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(failures == 0);
}

}  // namespace

TEST_CASE("a locked TensorDict is read from 8 threads while others index and stack it", "[threads]") {
  // libtorch's own intra-op threads are not what is tested here.
  at::set_num_threads(1);
  TensorDict td({{"a", iota({8, 3})},
                 {"n", TensorDict({{"b", iota({8, 2, 2}, at::kLong)}, {"m", iota({8}, at::kLong).remainder(2).to(at::kBool)}},
                                  {8})}},
                {8});
  td.lock_();
  const at::Tensor a = td.get("a");
  const at::Tensor b = td.get({"n", "b"});
  const at::Tensor mask = td.get({"n", "m"});

  run_threads(kReaders + kWriters, [&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      if (t < kReaders) {
        // Readers: lookups, iteration, metadata, repr.
        expect(td.contains({"n", "b"}));
        expect(td.is_locked());
        expect(td.batch_size() == std::vector<int64_t>{8});
        expect(td.keys({.include_nested = true, .leaves_only = true}).size() == 3);
        expect(at::equal(td.get("a"), a));
        expect(at::equal(td.get_td("n").get("b"), b));
        std::ostringstream os;
        os << td;
        expect(!os.str().empty());
      } else {
        // Others: index (views, masks), stack, clone, to, apply; then mutate
        // what they own (the key table is shared copy-on-write with td).
        const int64_t i = (t + r) % 8;
        auto one = td.index({i});
        expect(at::equal(one.get("a"), a[i]));
        auto part = td.index({Slice(1, 5)});
        expect(at::equal(part.get({"n", "b"}), b.slice(0, 1, 5)));
        auto picked = td.index({mask});
        expect(picked.batch_size()[0] == mask.sum().item<int64_t>());
        auto stacked = tensordict::stack({td, td, part.index({Slice(0, 1)}).expand({8})}, 0);
        expect(stacked.batch_size() == std::vector<int64_t>{3, 8});
        auto copy = td.clone();
        auto dbl = td.to(at::kDouble);
        expect(at::equal(dbl.get("a"), a.to(at::kDouble)));
        copy.unlock_();
        copy.set("new", iota({8}));
        copy.del_("a");
        one.unlock_();
        one.set("x", at::zeros({}));
        expect(!td.contains("new"));
        expect(!td.contains("x"));
        expect(td.contains("a"));
      }
    }
  });
}

TEST_CASE("a generated tensorclass is read from 8 threads while others index and stack it", "[threads]") {
  at::set_num_threads(1);
  using tc::rl::Observation;
  Observation obs({.pixels = iota({8, 3, 4, 4}, at::kByte), .state = iota({8, 5})}, {8});
  obs.lock_();
  const at::Tensor pixels = obs.pixels;
  run_threads(kReaders + kWriters, [&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      if (t < kReaders) {
        expect(at::equal(obs.pixels, pixels));
        expect(obs.batch_size() == std::vector<int64_t>{8});
        expect(obs.is_locked());
        std::ostringstream os;
        os << obs;
        expect(!os.str().empty());
      } else {
        const int64_t i = (t + r) % 8;
        Observation one = obs.index({i});
        expect(at::equal(one.pixels, pixels[i]));
        Observation both = Observation::stack({obs, obs.clone()}, 0);
        expect(both.batch_size() == std::vector<int64_t>{2, 8});
        auto td = obs.to_tensordict();
        expect(at::equal(td.get("state"), obs.state));
      }
    }
  });
}
