// The group itself: a c10d all_reduce and a ring of tagged tensors, with
// c10d's own calls (no tensordict), so that a failure here is the
// rendezvous's.
#include <ATen/ops/full.h>

#include "mixed_rank.h"

namespace {

mixed::Register rendezvous("rendezvous", [](const mixed::Rank& r) {
  std::vector<at::Tensor> sum{at::full({3}, double(r.rank + 1), at::kDouble)};
  r.group->allreduce(sum)->wait();
  mixed::expect_equal(sum[0], at::full({3}, r.world * (r.world + 1) / 2.0, at::kDouble), "all_reduce of rank + 1");

  std::vector<at::Tensor> out{at::full({2}, int64_t(r.rank * 10), at::kLong)};
  std::vector<at::Tensor> in{at::zeros({2}, at::kLong)};
  const int next = (r.rank + 1) % r.world, prev = (r.rank + r.world - 1) % r.world;
  auto sent = r.group->send(out, next, 7);
  r.group->recv(in, prev, 7)->wait();
  sent->wait();
  mixed::expect_equal(in[0], at::full({2}, int64_t(prev * 10), at::kLong), "the tensor from the previous rank");
});

}  // namespace
