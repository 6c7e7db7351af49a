// Fuzzes batch indexing: random index tuples against random batch shapes.
// Whatever BatchIndex / TensorDict::index accept must give exactly what the
// same index gives on a plain tensor of the batch shape (torch is the
// reference); what torch refuses, we refuse with an exception (not a crash).
#include <ATen/ATen.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "tensordict/batch_index.h"
#include "tensordict/tensordict.h"

using at::indexing::TensorIndex;

namespace {

struct Bytes {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  int64_t small(int64_t lo, int64_t hi) { return lo + next() % (hi - lo + 1); }
};

std::string describe(const std::vector<TensorIndex>& idx, const std::vector<int64_t>& batch) {
  std::string s = "batch [";
  for (auto b : batch) s += std::to_string(b) + ",";
  s += "] index (";
  for (const auto& i : idx) {
    std::ostringstream os;
    os << i;
    s += os.str() + ", ";
  }
  return s + ")";
}

[[noreturn]] void fail(const char* what, const std::vector<TensorIndex>& idx, const std::vector<int64_t>& batch,
                       const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_batch_index: %s for %s %s\n", what, describe(idx, batch).c_str(), detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool init = [] {
    at::set_num_threads(1);
    return true;
  }();
  (void)init;
  Bytes in{data, size};
  std::vector<int64_t> batch(static_cast<std::size_t>(in.small(0, 4)));
  for (auto& b : batch) b = in.small(0, 4);
  const int64_t numel = c10::multiply_integers(batch);

  std::vector<TensorIndex> idx;
  const auto count = in.small(0, 5);
  for (int64_t k = 0; k < count; ++k) {
    switch (in.next() % 9) {
      case 0:
      case 1: idx.emplace_back(in.small(-6, 6)); break;
      case 2: {
        const auto f = in.next();
        c10::optional<int64_t> start, stop, step;
        if (f & 1) start = in.small(-6, 6);
        if (f & 2) stop = in.small(-6, 6);
        if (f & 4) step = in.small(-1, 3);
        idx.emplace_back(at::indexing::Slice(start, stop, step));
        break;
      }
      case 3: idx.emplace_back(at::indexing::None); break;
      case 4: idx.emplace_back(at::indexing::Ellipsis); break;
      case 5: idx.emplace_back(static_cast<bool>(in.next() & 1)); break;
      case 6: {  // a long tensor, rank 0..2
        std::vector<int64_t> shape(static_cast<std::size_t>(in.small(0, 2)));
        for (auto& s : shape) s = in.small(0, 3);
        auto t = at::empty(shape, at::kLong);
        auto* p = t.data_ptr<int64_t>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = in.small(-5, 5);
        idx.emplace_back(t);
        break;
      }
      case 7: {  // a bool mask over some batch dims (usually the right shape)
        std::vector<int64_t> shape;
        const auto from = static_cast<std::size_t>(in.small(0, static_cast<int64_t>(batch.size())));
        const auto len = static_cast<std::size_t>(in.small(0, static_cast<int64_t>(batch.size() - from)));
        for (std::size_t d = from; d < from + len; ++d) shape.push_back(batch[d]);
        if (in.next() % 8 == 0 && !shape.empty()) shape.back() = in.small(0, 5);
        auto t = at::empty(shape, at::kBool);
        auto* p = t.data_ptr<bool>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = in.next() & 1;
        idx.emplace_back(t);
        break;
      }
      default: {  // a uint8 or int32 tensor index
        auto t = at::empty({in.small(0, 3)}, in.next() & 1 ? at::kInt : at::kByte);
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = in.small(0, 3);
        idx.emplace_back(t);
        break;
      }
    }
  }

  // The reference: the index on a tensor whose dims are the batch dims.
  const at::Tensor base = at::arange(numel, at::kLong).reshape(batch);
  at::Tensor expected;
  bool ref_ok = true;
  std::string ref_error;
  try {
    expected = base.index(idx);
  } catch (const std::exception& e) {
    ref_ok = false;
    ref_error = e.what();
  }

  std::vector<int64_t> result_batch;
  at::Tensor got, got_feature;
  bool ours_ok = true;
  std::string our_error;
  try {
    tensordict::BatchIndex bi(idx, batch);
    result_batch = bi.result_batch_size().vec();
    got = bi.apply(base);
    // A leaf with a feature dim: the batch index must leave it alone.
    std::vector<int64_t> fshape = batch;
    fshape.push_back(2);
    const at::Tensor feature = at::stack({base * 2, base * 2 + 1}, -1);
    got_feature = bi.apply(feature);
    if (got_feature.sizes().vec() != [&] {
          auto s = result_batch;
          s.push_back(2);
          return s;
        }()) {
      fail("feature leaf has the wrong shape", idx, batch);
    }
    // The same through a TensorDict.
    tensordict::TensorDict td({{"a", base}, {"f", feature}}, batch);
    auto sub = td.index(idx);
    if (sub.batch_size().vec() != result_batch) fail("TensorDict::index batch size differs", idx, batch);
    if (!at::equal(sub.get("a"), got)) fail("TensorDict::index value differs", idx, batch);
    // index_put_ of a scalar agrees with torch's.
    if (ref_ok) {
      at::Tensor a = base.clone(), b = base.clone();
      tensordict::BatchIndex(idx, batch).put(a, at::scalar_tensor(-1, at::kLong));
      b.index_put_(idx, -1);
      if (!at::equal(a, b)) fail("put differs from index_put_", idx, batch);
    }
  } catch (const std::exception& e) {
    ours_ok = false;
    our_error = e.what();
    if (our_error.empty()) fail("empty error message", idx, batch);
  }

  if (ref_ok != ours_ok) {
    fail(ref_ok ? "torch accepts but tensordict refuses" : "torch refuses but tensordict accepts", idx, batch,
         ref_ok ? our_error : ref_error);
  }
  if (!ref_ok) return 0;
  if (expected.sizes().vec() != result_batch) fail("result_batch_size differs from torch", idx, batch);
  if (!at::equal(expected, got)) fail("values differ from torch", idx, batch);
  if (!at::equal(got_feature.select(-1, 0), expected * 2) || !at::equal(got_feature.select(-1, 1), expected * 2 + 1))
    fail("feature leaf values differ", idx, batch);
  return 0;
}
