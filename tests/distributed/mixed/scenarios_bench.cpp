// The C++ sender of tests/benchmarks/bench_mixed.py: "bench MODE ITERATIONS"
// sends bench_td() to rank 1 ITERATIONS times (MODE: per_leaf or
// consolidated), after one untimed round trip that both sides use to start
// together; rank 1 (the receiver, Python or C++) times its loop.
#include <ATen/ATen.h>

#include <string>

#include "mixed_rank.h"
#include "tensordict/tensordict.h"

namespace {

namespace td = tensordict;

// 100 float32 leaves of [64, 8] in ten nested tensordicts of ten (as bench_mixed.py's).
td::TensorDict bench_td() {
  td::TensorDict root({}, {});
  for (int i = 0; i < 10; ++i) {
    td::TensorDict group({}, {});
    for (int j = 0; j < 10; ++j) group.set("leaf" + std::to_string(j), at::full({64, 8}, float(i * 10 + j)));
    root.set("group" + std::to_string(i), group);
  }
  return root;
}

mixed::Register bench("bench", [](const mixed::Rank& r) {
  const bool consolidated = r.args.at(0) == "consolidated";
  const int iterations = std::stoi(r.args.at(1));
  td::TensorDict t = bench_td();
  if (consolidated) t = t.consolidate();
  const td::SendOptions options{.consolidated = consolidated};
  std::vector<at::Tensor> go{at::zeros({1})};
  if (r.rank == 0) {
    r.group->recv(go, 1, 999)->wait();  // the receiver is ready
    for (int i = 0; i < iterations; ++i) td::send(t, r.group, 1, options);
    r.group->recv(go, 1, 998)->wait();  // it received them all
  } else {
    r.group->send(go, 0, 999)->wait();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) td::recv(t, r.group, 0, options);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    r.group->send(go, 0, 998)->wait();
    std::printf("BENCH per_iteration_us=%.1f\n", took.count() / iterations * 1e6);
  }
});

}  // namespace
