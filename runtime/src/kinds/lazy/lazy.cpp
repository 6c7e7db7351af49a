// LazyStackedTensorDict: the handle's lazy operations.
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/errors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/format.h"
#include "core/libtorch_compat.h"
#include "kinds/lazy/lazy_impl.h"

namespace tensordict {

namespace {

const detail::LazyStackedImpl& lazy_of(const TensorDict& td) {
  return static_cast<const detail::LazyStackedImpl&>(*td.impl());
}

// (A dim of unknown size, -1, is kept whole only by a slice without a stop:
// libtorch's default stop, which differs between its versions.)
bool is_full_slice(const TensorIndex& item, int64_t size) {
  if (!item.is_slice()) return false;
  const auto s = detail::slice_bounds(item.slice());
  static const int64_t open_stop = detail::slice_bounds(Slice()).stop;
  const bool to_end = size < 0 ? s.stop >= open_stop : s.stop >= size;
  return s.start == 0 && to_end && s.step == 1;
}

// The index as one item per batch dim (Ellipsis expanded, trailing dims full
// slices); nullopt when it has items a per-dim split cannot express (None,
// bool scalars, masks over several dims, several tensor indices).
std::optional<std::vector<TensorIndex>> per_dim(at::ArrayRef<TensorIndex> index, int64_t batch_dims) {
  int64_t consumed = 0;
  int tensors = 0;
  for (const auto& item : index) {
    if (item.is_none() || item.is_boolean()) return std::nullopt;
    if (item.is_tensor()) {
      if (item.tensor().dim() != 1) return std::nullopt;
      ++tensors;
    }
    if (!item.is_ellipsis()) ++consumed;
  }
  if (tensors > 1 || consumed > batch_dims) return std::nullopt;
  std::vector<TensorIndex> dims;
  for (const auto& item : index) {
    if (item.is_ellipsis()) {
      for (int64_t i = 0; i < batch_dims - consumed; ++i) dims.emplace_back(Slice());
    } else {
      dims.push_back(item);
    }
  }
  while (static_cast<int64_t>(dims.size()) < batch_dims) dims.emplace_back(Slice());
  return dims;
}

}  // namespace

LazyStackedTensorDict::LazyStackedTensorDict(std::vector<TensorDict> tensordicts, int64_t stack_dim,
                                             std::optional<std::vector<int64_t>> batch_size, std::optional<at::Device> device)
    : TensorDict(std::make_shared<detail::LazyStackedImpl>(std::move(tensordicts), stack_dim, std::nullopt,
                                                               std::move(batch_size), device)) {}

LazyStackedTensorDict::LazyStackedTensorDict(const TensorDict& td) : TensorDict(td.impl()) {
  require_kind(Kind::LazyStack);
}

int64_t LazyStackedTensorDict::stack_dim() const { return lazy_of(*this).stack_dim(); }

const std::vector<TensorDict>& LazyStackedTensorDict::tensordicts() const { return lazy_of(*this).members(); }

std::vector<std::vector<std::string>> LazyStackedTensorDict::exclusive_keys() const {
  const auto common = lazy_of(*this).common_keys();
  std::vector<std::vector<std::string>> out;
  for (const auto& m : tensordicts()) {
    std::vector<std::string> own;
    m.impl()->for_each_key([&](const std::string& key, EntryKind) {
      if (std::find(common.begin(), common.end(), key) == common.end()) own.push_back(key);
    });
    out.push_back(std::move(own));
  }
  return out;
}

bool LazyStackedTensorDict::contains(const TensorDict& td) const {
  const auto& members = tensordicts();
  return std::any_of(members.begin(), members.end(), [&](const TensorDict& m) { return m.impl() == td.impl(); });
}

std::vector<at::Tensor> LazyStackedTensorDict::get_list(const NestedKey& key) const {
  std::vector<at::Tensor> out;
  for (const auto& m : tensordicts()) out.push_back(m.get(key));
  return out;
}

namespace {
// The tensor at `key` under `td`, a lazy stack met on the way padded rather
// than stacked (members that are stacks of different shapes).
at::Tensor padded_get(const TensorDict& td, const NestedKey& key, const at::Scalar& value) {
  if (detail::as_lazy(*td.impl())) return LazyStackedTensorDict(td).get_padded(key, value);
  if (!key.is_nested()) return td.get(key);
  const auto rest = key.path().subspan(1);
  return padded_get(td.get_td(key.front()), NestedKey(std::vector<std::string>(rest.begin(), rest.end())), value);
}
}  // namespace

at::Tensor LazyStackedTensorDict::get_padded(const NestedKey& key, const at::Scalar& value) const {
  std::vector<at::Tensor> parts;
  for (const auto& m : tensordicts()) parts.push_back(padded_get(m, key, value));
  std::vector<int64_t> largest = parts.front().sizes().vec();
  for (const auto& p : parts) {
    if (p.dim() != static_cast<int64_t>(largest.size())) {
      throw RuntimeError(fmt::format("get_padded: key {} has tensors of different numbers of dims ({} and {})", key.repr(),
                                           largest.size(), p.dim()));
    }
    for (int64_t d = 0; d < p.dim(); ++d) largest[d] = std::max(largest[d], p.size(d));
  }
  for (auto& p : parts) {
    std::vector<int64_t> pads;
    for (int64_t d = p.dim() - 1; d >= 0; --d) {
      pads.push_back(0);
      pads.push_back(largest[d] - p.size(d));
    }
    p = at::constant_pad_nd(p, pads, value);
  }
  return at::stack(parts, stack_dim());
}

void LazyStackedTensorDict::append(const TensorDict& td) {
  check_unlocked();
  detail::mutable_lazy_of(*this).add_member(static_cast<int64_t>(tensordicts().size()), td);
}

void LazyStackedTensorDict::insert(int64_t position, const TensorDict& td) {
  check_unlocked();
  detail::mutable_lazy_of(*this).add_member(position, td);
}

// ---- the kind-preserving operations (TensorDictImpl's virtuals) -------------------

namespace detail {

std::optional<LazyStackedImpl::Selection> LazyStackedImpl::select_members(at::ArrayRef<TensorIndex> index) const {
  const int64_t sd = stack_dim_;
  const auto n = static_cast<int64_t>(members_.size());
  const auto dims = per_dim(index, static_cast<int64_t>(batch_size_.size()));
  if (!dims) return std::nullopt;
  // Validates the index the usual way (ranges, masks' shapes); members of
  // different batch sizes validate their own part.
  if (member_batch_known()) (void)BatchIndex(index, batch_size_);

  Selection out;
  const TensorIndex& along = (*dims)[sd];
  out.others.assign(dims->begin(), dims->end());
  out.others.erase(out.others.begin() + sd);
  out.others_trivial = true;
  for (std::size_t d = 0; d < out.others.size(); ++d) out.others_trivial = out.others_trivial && is_full_slice(out.others[d], member_batch_[d]);

  if (along.is_integer()) {
    int64_t i = detail::index_integer(along);
    out.chosen.push_back(i < 0 ? i + n : i);
    out.single = true;
  } else if (along.is_slice()) {
    const at::Tensor ids = at::arange(n).index({along});
    for (int64_t k = 0; k < ids.numel(); ++k) out.chosen.push_back(ids[k].item<int64_t>());
  } else {
    const at::Tensor t = along.tensor();
    const at::Tensor ids = (t.scalar_type() == at::kBool || t.scalar_type() == at::kByte) ? t.nonzero().view({-1}) : t.to(at::kLong);
    for (int64_t k = 0; k < ids.numel(); ++k) {
      int64_t i = ids[k].item<int64_t>();
      out.chosen.push_back(i < 0 ? i + n : i);
    }
  }
  // The stack dim's place in the result: the dims before it that survive.
  for (int64_t d = 0; d < sd; ++d) out.result_stack_dim += out.others[d].is_integer() ? 0 : 1;
  return out;
}

TensorDict LazyStackedImpl::index(at::ArrayRef<TensorIndex> index) const {
  const auto sel = select_members(index);
  // Not expressible per member, or no member left to stack: the dense result.
  if (!sel || sel->chosen.empty()) return TensorDictImpl::index(index);
  std::vector<TensorDict> results;
  for (int64_t i : sel->chosen) {
    const TensorDict& m = members_[i];
    results.push_back(sel->others_trivial ? m : m.index(sel->others));
  }
  if (sel->single) return results.front();
  return TensorDict(restack(std::move(results), sel->result_stack_dim));
}

void LazyStackedImpl::assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                                const at::Tensor& value) {
  // An index the members cannot split: stacked, as written.
  const auto sel = select_written(index);
  if (!sel) return TensorDictImpl::assign_at(key, resolved, index, value);
  // tensordict writes into the members the index selects, each its part of
  // the value, so members of different shapes take values of their shapes.
  const auto result_dims = static_cast<int64_t>(BatchIndex(index, batch_size_).result_batch_size().size());
  for (std::size_t k = 0; k < sel->chosen.size(); ++k) {
    const TensorDict& m = members_[sel->chosen[k]];
    at::Tensor part = value;
    if (!sel->single) {
      // The value broadcasts from the right: its dims before the stack dim
      // of the result, once the member's feature dims are counted.
      const auto feature_dims = static_cast<int64_t>(m.impl()->tensor_meta(key).shape.size() - member_batch_.size());
      const int64_t lead = result_dims + feature_dims - value.dim();
      const int64_t d = sel->result_stack_dim - lead;
      if (d >= 0) part = value.select(d, value.size(d) == 1 ? 0 : static_cast<int64_t>(k));
    }
    m.impl()->assign_at(key, BatchIndex(sel->others, m.batch_size()), sel->others, part);
  }
}

std::optional<LazyStackedImpl::Selection> LazyStackedImpl::select_written(at::ArrayRef<TensorIndex> index) const {
  const auto ellipsis = std::find_if(index.begin(), index.end(), [](const TensorIndex& i) { return i.is_ellipsis(); });
  return ellipsis == index.end() || ellipsis + 1 == index.end() ? select_members(index) : std::nullopt;
}

bool LazyStackedImpl::put_members(at::ArrayRef<TensorIndex> index, const TensorDict& value) const {
  const auto sel = select_written(index);
  if (!sel || sel->chosen.empty()) return false;
  const std::vector<TensorDict> parts = sel->single ? std::vector<TensorDict>{value} : value.unbind(sel->result_stack_dim);
  for (std::size_t k = 0; k < sel->chosen.size(); ++k) {
    TensorDict m = members_[sel->chosen[k]];
    if (sel->single && sel->others_trivial) {
      m.update(parts[k], UpdateOptions{false, /*inplace=*/true, std::nullopt, false});
    } else {
      m.index_put_(sel->others, parts[k]);
    }
  }
  return true;
}

std::vector<TensorDict> LazyStackedImpl::unbind(int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, static_cast<int64_t>(batch_size_.size()), "unbind");
  if (d == stack_dim_) return members_;
  if (members_.empty()) return TensorDictImpl::unbind(dim);
  // Members of different sizes along `d` have no common slices.
  require_known_sizes({batch_size_[d]}, "unbind");
  // Across the stack dim: each member unbound, the slices stacked lazily.
  std::vector<std::vector<TensorDict>> slices(static_cast<std::size_t>(batch_size_[d]));
  for (const auto& m : members_) {
    auto parts = m.unbind(d < stack_dim_ ? d : d - 1);
    for (std::size_t k = 0; k < parts.size(); ++k) slices[k].push_back(std::move(parts[k]));
  }
  std::vector<TensorDict> out;
  out.reserve(slices.size());
  for (auto& s : slices) out.emplace_back(restack(std::move(s), d < stack_dim_ ? stack_dim_ - 1 : stack_dim_));
  return out;
}

std::shared_ptr<TensorDictImpl> LazyStackedImpl::map_parts(c10::function_ref<TensorDict(const TensorDict&)> fn) const {
  return map_members([&](const TensorDict& m, std::size_t) { return fn(m); });
}

std::shared_ptr<LazyStackedImpl> LazyStackedImpl::map_members(
    c10::function_ref<TensorDict(const TensorDict&, std::size_t)> fn) const {
  std::vector<TensorDict> out;
  out.reserve(members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) out.push_back(fn(members_[i], i));
  return restack(std::move(out), stack_dim_);
}

std::shared_ptr<LazyStackedImpl> LazyStackedImpl::restack(std::vector<TensorDict> members, int64_t stack_dim) const {
  // No member left: the result describes the same members to come.
  auto member_batch = members.empty() ? std::optional<std::vector<int64_t>>(member_batch_) : std::nullopt;
  return std::make_shared<LazyStackedImpl>(std::move(members), stack_dim, stack_dim_name_, std::move(member_batch), device());
}

}  // namespace detail

LazyStackedTensorDict TensorDict::to_lazystack(int64_t dim) const {
  std::vector<TensorDict> parts;
  for (auto& part : unbind(dim)) parts.emplace_back(std::move(part));
  return LazyStackedTensorDict(std::move(parts), wrap_batch_dim(dim, batch_dims(), "to_lazystack"));
}

LazyStackedTensorDict lazy_stack(const std::vector<TensorDict>& tds, int64_t dim) {
  if (tds.empty()) throw RuntimeError("lazy_stack: items cannot be empty");
  return LazyStackedTensorDict(tds, dim);
}

}  // namespace tensordict
