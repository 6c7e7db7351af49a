// Shape ops over batch dims that view the leaves (shape_mapping.h).
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "format.h"
#include "shape_mapping.h"

namespace tensordict {

using detail::mapped;
using detail::mapped_pieces;

TensorDict TensorDictBase::reshape(at::IntArrayRef shape) const { return mapped(*this, shape::Reshape(batch_size(), shape)); }

TensorDict TensorDictBase::view(at::IntArrayRef shape) const { return mapped(*this, shape::View(batch_size(), shape)); }

TensorDict TensorDictBase::permute(at::IntArrayRef dims) const {
  return mapped(*this, shape::Permute(batch_size(), names(), dims));
}

TensorDict TensorDictBase::transpose(int64_t dim0, int64_t dim1) const {
  return mapped(*this, shape::Transpose(batch_size(), names(), dim0, dim1));
}

TensorDict TensorDictBase::squeeze(std::optional<int64_t> dim) const {
  return mapped(*this, shape::Squeeze(batch_size(), names(), dim));
}

TensorDict TensorDictBase::unsqueeze(int64_t dim) const { return mapped(*this, shape::Unsqueeze(batch_size(), names(), dim)); }

TensorDict TensorDictBase::expand(at::IntArrayRef shape) const { return mapped(*this, shape::Expand(batch_size(), names(), shape)); }

TensorDict TensorDictBase::broadcast_to(at::IntArrayRef shape) const {
  return mapped(*this, shape::Expand(batch_size(), names(), shape, /*is_broadcast_to=*/true));
}

TensorDict TensorDictBase::expand_as(const at::Tensor& other) const { return expand(other.sizes()); }

TensorDict TensorDictBase::expand_as(const TensorDictBase& other) const {
  // First to the other's batch size, then each leaf to its counterpart's
  // feature dims too.
  return expand(other.batch_size()).apply([](const at::Tensor& a, const at::Tensor& b) { return a.expand_as(b); }, other);
}

TensorDict TensorDictBase::flatten(int64_t start_dim, int64_t end_dim) const {
  return mapped(*this, shape::Flatten(batch_size(), names(), start_dim, end_dim));
}

TensorDict TensorDictBase::unflatten(int64_t dim, at::IntArrayRef sizes) const {
  return mapped(*this, shape::Unflatten(batch_size(), names(), dim, sizes));
}

std::vector<TensorDictBase> TensorDictBase::unbind(int64_t dim) const { return impl_->unbind(dim); }

// The default: every leaf unbound, dense pieces.
std::vector<TensorDictBase> TensorDictImpl::unbind(int64_t dim) const {
  const TensorDictBase self(std::const_pointer_cast<TensorDictImpl>(shared_from_this()));
  auto pieces = mapped_pieces(self, shape::Unbind(batch_size(), names(), dim));
  return {std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end())};
}

std::vector<TensorDict> TensorDictBase::split(at::IntArrayRef split_sizes, int64_t dim) const {
  return mapped_pieces(*this, shape::Split(batch_size(), names(), split_sizes.vec(), dim));
}

std::vector<TensorDict> TensorDictBase::split(int64_t split_size, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
  return split(shape::split_sizes(batch_size()[d], split_size), d);
}

std::vector<TensorDict> TensorDictBase::chunk(int64_t chunks, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "chunk");
  return split(shape::chunk_sizes(batch_size()[d], chunks), d);
}

std::vector<TensorDict> TensorDictBase::tensor_split(int64_t sections, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  return split(shape::tensor_split_sizes(batch_size()[d], sections), d);
}

std::vector<TensorDict> TensorDictBase::tensor_split(at::IntArrayRef indices, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  return split(shape::tensor_split_sizes(batch_size()[d], indices), d);
}

TensorDict TensorDictBase::movedim(at::IntArrayRef source, at::IntArrayRef destination) const {
  if (source.size() != destination.size()) {
    throw std::invalid_argument(fmt::format("movedim: source {} and destination {} must have the same number of dims",
                                            shape_string(source), shape_string(destination)));
  }
  const int64_t nb = batch_dims();
  std::vector<int64_t> order(nb, -1);  // order[destination] = source
  std::vector<bool> moved(nb, false);
  for (std::size_t i = 0; i < source.size(); ++i) {
    const int64_t from = wrap_batch_dim(source[i], nb, "movedim");
    const int64_t to = wrap_batch_dim(destination[i], nb, "movedim");
    if (moved[from]) throw std::runtime_error(fmt::format("movedim: repeated dim in source {}", shape_string(source)));
    if (order[to] != -1) throw std::runtime_error(fmt::format("movedim: repeated dim in destination {}", shape_string(destination)));
    moved[from] = true;
    order[to] = from;
  }
  // The other dims keep their order in the free positions.
  int64_t next = 0;
  for (auto& o : order) {
    if (o != -1) continue;
    while (moved[next]) ++next;
    o = next++;
  }
  return permute(order);
}

TensorDict TensorDictBase::movedim(int64_t source, int64_t destination) const {
  return movedim(at::IntArrayRef(source), at::IntArrayRef(destination));
}

TensorDict TensorDictBase::swapaxes(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDictBase::swapdims(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDictBase::narrow(int64_t dim, int64_t start, int64_t length) const {
  return mapped(*this, shape::Narrow(batch_size(), names(), dim, start, length));
}

}  // namespace tensordict
