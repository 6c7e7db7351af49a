// Fuzzes batch indexing: random index tuples against random batch shapes.
// Whatever BatchIndex / TensorDict::index accept must give exactly what the
// same index gives on a plain tensor of the batch shape (torch is the
// reference); what torch refuses, we refuse with an exception (not a crash).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "tensordict/batch_index.h"
#include "fuzz_bytes.h"
#include "tensordict/tensordict.h"

using at::indexing::TensorIndex;

namespace {

using fuzz::Bytes;

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
        if (step && *step == 0) step = c10::nullopt;  // Slice() itself refuses a zero step
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

  // The reference: the index on a tensor whose dims are the batch dims, in
  // numpy's semantics. Two libtorch 1.13 quirks are worked around: int32
  // index tensors (modern torch takes them as long; 1.13 refuses) and masks
  // of 2+ dims followed by other indices (1.13's C++ applySlicing counts a
  // mask as one dim): a k-dim mask is given as its k nonzero() index tensors,
  // which numpy defines it to be.
  std::vector<TensorIndex> ref_idx;
  for (const auto& i : idx) {
    if (i.is_tensor() && i.tensor().scalar_type() == at::kInt) {
      ref_idx.emplace_back(i.tensor().to(at::kLong));
    } else if (i.is_tensor() && i.tensor().dim() >= 1 &&
               (i.tensor().scalar_type() == at::kBool || i.tensor().scalar_type() == at::kByte)) {
      const at::Tensor nz = (i.tensor() != 0).nonzero();
      for (int64_t j = 0; j < i.tensor().dim(); ++j) ref_idx.emplace_back(nz.select(1, j));
    } else {
      ref_idx.push_back(i);
    }
  }
  const at::Tensor base = at::arange(numel, at::kLong).reshape(batch);
  at::Tensor expected;
  bool ref_ok = true;
  std::string ref_error;
  // nonzero() drops the mask's shape check: check it here, with numpy's
  // positions (items before an ellipsis from the front, after it from the back).
  {
    auto consumed = [](const TensorIndex& i) -> int64_t {
      if (i.is_integer() || i.is_slice()) return 1;
      if (i.is_tensor()) {
        const auto& t = i.tensor();
        const bool mask = t.scalar_type() == at::kBool || t.scalar_type() == at::kByte;
        if (t.dim() == 0) return mask ? 0 : 1;
        return mask ? t.dim() : 1;
      }
      return 0;
    };
    const auto ell = std::find_if(idx.begin(), idx.end(), [](const TensorIndex& i) { return i.is_ellipsis(); });
    int64_t total = 0;
    for (const auto& i : idx) total += consumed(i);
    int64_t pos = 0;
    for (auto it = idx.begin(); it != idx.end(); ++it) {
      if (it == ell) {
        pos = static_cast<int64_t>(batch.size()) - [&] {
          int64_t after = 0;
          for (auto jt = it + 1; jt != idx.end(); ++jt) after += consumed(*jt);
          return after;
        }();
        continue;
      }
      const int64_t k = consumed(*it);
      if (it->is_tensor() && it->tensor().dim() >= 1 &&
          (it->tensor().scalar_type() == at::kBool || it->tensor().scalar_type() == at::kByte)) {
        const bool fits = total <= static_cast<int64_t>(batch.size()) && pos >= 0 &&
                          pos + k <= static_cast<int64_t>(batch.size()) &&
                          it->tensor().sizes() == at::IntArrayRef(batch).slice(static_cast<std::size_t>(pos),
                                                                               static_cast<std::size_t>(k));
        if (!fits) {
          ref_ok = false;
          ref_error = "mask shape does not match the indexed dims";
        }
      }
      pos += k;
    }
  }
  if (ref_ok) try {
    // td[()] is the whole tensordict (libtorch's C++ index() refuses an empty list).
    expected = idx.empty() ? base : base.index(ref_idx);
  } catch (const std::exception& e) {
    ref_ok = false;
    ref_error = e.what();
  }
  // Python (and tensordict) refuse a second ellipsis; libtorch's C++ index()
  // lets it through. Python is the reference here.
  if (std::count_if(idx.begin(), idx.end(), [](const TensorIndex& i) { return i.is_ellipsis(); }) > 1) {
    ref_ok = false;
    ref_error = "an index can only have a single ellipsis";
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
    // index_put_ of a scalar agrees with torch's (where torch's own
    // index_put_ takes the index: it refuses uint8 masks with values > 1
    // that its index() accepts).
    if (ref_ok) {
      at::Tensor a = base.clone(), b = base.clone();
      bool torch_put = true;
      try {
        if (idx.empty()) {
          b.fill_(-1);
        } else {
          b.index_put_(ref_idx, -1);
        }
      } catch (const std::exception&) {
        torch_put = false;
      }
      if (torch_put) {
        tensordict::BatchIndex(idx, batch).put(a, at::scalar_tensor(-1, at::kLong));
        if (!at::equal(a, b)) fail("put differs from index_put_", idx, batch);
      }
    }
  } catch (const std::exception& e) {
    ours_ok = false;
    our_error = e.what();
    if (our_error.empty()) fail("empty error message", idx, batch);
  }

  // Where libtorch 1.13 refuses and we accept (torch's own quirks: a mask
  // after a 0-dim bool index, ...), only a bounds error matters: accepting
  // an out-of-range index would read the wrong element.
  if (!ref_ok && ours_ok && ref_error.find("out of bounds") == std::string::npos &&
      ref_error.find("out of range") == std::string::npos) {
    return 0;
  }
  if (ref_ok != ours_ok) {
    fail(ref_ok ? "torch accepts but tensordict refuses" : "torch refuses but tensordict accepts", idx, batch,
         ref_ok ? our_error : ref_error);
  }
  if (!ref_ok) return 0;
  if (expected.sizes().vec() != result_batch) {
    std::string d = "torch " + std::to_string(expected.dim()) + " dims:";
    for (auto v : expected.sizes()) d += " " + std::to_string(v);
    d += "; ours:";
    for (auto v : result_batch) d += " " + std::to_string(v);
    fail("result_batch_size differs from torch", idx, batch, d);
  }
  if (!at::equal(expected, got)) fail("values differ from torch", idx, batch);
  if (!at::equal(got_feature.select(-1, 0), expected * 2) || !at::equal(got_feature.select(-1, 1), expected * 2 + 1))
    fail("feature leaf values differ", idx, batch);
  return 0;
}
