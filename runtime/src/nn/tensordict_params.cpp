// TensorDictParams: a tensordict's leaves registered as a module's parameters
// and buffers, one submodule per nested tensordict.
#include "tensordict/nn/tensordict_params.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/kind_ops.h"
#include "nn/text.h"
#include "tensordict/errors.h"
#include "tensordict/kind.h"
#include "tensordict/repr.h"

namespace tensordict::nn {

namespace {

// libtorch refuses a parameter, buffer or submodule name that is empty or
// holds "."; say so before anything is converted.
void check_param_names(const NestedKey& key) {
  for (const auto& part : key.path()) {
    if (part.empty() || part.find('.') != std::string::npos) {
      throw ValueError(fmt::format(
          "TensorDictParams: key {} cannot name a parameter: libtorch's parameter names are not empty and hold no '.'",
          text::key_str(key)));
    }
  }
}

void check_tree(const TensorDict& td) {
  if (!detail::kind_ops(*td.impl()).owns_entries) {
    throw TypeError(fmt::format("TensorDictParams wraps a TensorDict, got a {} (convert it with to_tensordict())",
                                type_name(td.kind())));
  }
  for (const auto& key : td.keys({.include_nested = true})) check_param_names(key);
}

bool is_parameter(const at::Tensor& t) { return t.is_leaf() && t.requires_grad(); }

}  // namespace

TensorDictParamsImpl::TensorDictParamsImpl(TensorDict parameters, Options options)
    : td_(std::move(parameters)), no_convert_(options.no_convert) {
  check_tree(td_);
  unlocked([&] { register_entries(); });
  if (options.lock) td_.lock_();
}

TensorDictParamsImpl::TensorDictParamsImpl(Level, TensorDict level, bool no_convert)
    : td_(std::move(level)), no_convert_(no_convert) {
  register_entries();
}

template <class F>
void TensorDictParamsImpl::unlocked(F&& write) {
  const bool locked = td_.is_locked();
  if (locked) td_.unlock_();
  try {
    write();
  } catch (...) {
    if (locked) td_.lock_();
    throw;
  }
  if (locked) td_.lock_();
}

at::Tensor TensorDictParamsImpl::convert(const at::Tensor& value, bool& as_param) const {
  // tensordict's _maybe_make_param / _maybe_make_param_or_buffer: a
  // parameter stays one; without no_convert a float16/32/64 tensor becomes
  // one (nn.Parameter(t): a new leaf on the same storage); the rest are
  // buffers, kept as they are.
  as_param = is_parameter(value);
  if (as_param || no_convert_) return value;
  const auto dtype = value.scalar_type();
  if (dtype == at::kHalf || dtype == at::kFloat || dtype == at::kDouble) {
    as_param = true;
    return value.detach().requires_grad_(true);
  }
  return value;
}

void TensorDictParamsImpl::register_entries() {
  for (const auto& [key, value] : td_.items()) {
    const std::string& name = key.front();
    if (value.is_tensor()) {
      register_leaf(name);
    } else if (value.is_tensordict()) {
      register_module(name, std::shared_ptr<TensorDictParamsImpl>(
                                new TensorDictParamsImpl(Level{}, value.tensordict(), no_convert_)));
    }
  }
}

void TensorDictParamsImpl::register_leaf(const std::string& name) {
  const at::Tensor stored = td_.get(name);
  bool as_param = false;
  at::Tensor value = convert(stored, as_param);
  if (children_contains(name)) unregister_module(name);
  if (at::Tensor* param = parameters_.find(name)) {
    if (as_param) {
      *param = value;
    } else {
      parameters_.erase(name);
      register_buffer(name, value);
    }
  } else if (auto buffers = named_buffers(/*recurse=*/false); at::Tensor* buffer = buffers.find(name)) {
    // A buffer stays registered (libtorch cannot unregister one): it takes
    // the new value's data, and the tensordict holds the registered tensor.
    if (!buffer->is_same(value)) buffer->set_data(value);
    value = *buffer;
  } else if (as_param) {
    register_parameter(name, value, value.requires_grad());
  } else {
    register_buffer(name, value);
  }
  if (!value.is_same(stored)) td_.set(name, value);
}

bool TensorDictParamsImpl::children_contains(const std::string& name) const {
  return named_children().contains(name);
}

void TensorDictParamsImpl::check_replaceable(const NestedKey& key, std::optional<bool> as_param) const {
  if (as_param == false) return;
  const std::string& name = key.path().back();
  if (named_buffers(/*recurse=*/false).contains(name)) {
    throw TypeError(fmt::format(
        "TensorDictParams: {} is registered as a buffer, which a libtorch module cannot unregister: it can only be "
        "set to another buffer",
        text::key_str(key)));
  }
}

TensorDictParamsImpl* TensorDictParamsImpl::existing_level_of(const NestedKey& key) {
  TensorDictParamsImpl* level = this;
  const auto& path = key.path();
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    auto children = level->named_children();
    auto* child = children.find(path[i]);
    if (!child) return nullptr;
    level = static_cast<TensorDictParamsImpl*>(child->get());
  }
  return level;
}

TensorDictParamsImpl& TensorDictParamsImpl::level_of(const NestedKey& key) {
  TensorDictParamsImpl* level = this;
  const auto& path = key.path();
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    auto children = level->named_children();
    if (auto* child = children.find(path[i])) {
      level = static_cast<TensorDictParamsImpl*>(child->get());
      continue;
    }
    // Created by the write (or a tensor replaced by a level).
    if (level->named_parameters(/*recurse=*/false).contains(path[i])) level->parameters_.erase(path[i]);
    auto created = std::shared_ptr<TensorDictParamsImpl>(
        new TensorDictParamsImpl(Level{}, level->td_.get_td(path[i]), no_convert_));
    level->register_module(path[i], created);
    level = created.get();
  }
  return *level;
}

void TensorDictParamsImpl::check_write(const NestedKey& key, std::optional<bool> as_param) {
  check_param_names(key);
  // Every registered tensor the write replaces: the leaf at `key`, or a leaf
  // on its path that becomes a level.
  TensorDictParamsImpl* level = this;
  const auto& path = key.path();
  for (std::size_t i = 0; i < path.size(); ++i) {
    const NestedKey prefix(path.first(i + 1));
    if (i + 1 == path.size()) {
      level->check_replaceable(prefix, as_param);
      return;
    }
    auto children = level->named_children();
    auto* child = children.find(path[i]);
    if (!child) {
      level->check_replaceable(prefix, std::nullopt);
      return;
    }
    level = static_cast<TensorDictParamsImpl*>(child->get());
  }
}

TensorDictParamsImpl& TensorDictParamsImpl::set(const NestedKey& key, const at::Tensor& value) {
  bool as_param = false;
  (void)convert(value, as_param);
  check_write(key, as_param);
  unlocked([&] {
    td_.set(key, value);
    level_of(key).register_leaf(key.path().back());
  });
  return *this;
}

TensorDictParamsImpl& TensorDictParamsImpl::set(const NestedKey& key, const TensorDict& value) {
  check_write(key, std::nullopt);
  check_tree(value);
  unlocked([&] {
    td_.set(key, value);
    TensorDictParamsImpl& level = level_of(key);
    const std::string& name = key.path().back();
    if (level.children_contains(name)) level.unregister_module(name);
    if (level.named_parameters(/*recurse=*/false).contains(name)) level.parameters_.erase(name);
    level.register_module(name, std::shared_ptr<TensorDictParamsImpl>(
                                    new TensorDictParamsImpl(Level{}, level.td_.get_td(name), no_convert_)));
  });
  return *this;
}

TensorDictParamsImpl& TensorDictParamsImpl::del_(const NestedKey& key) {
  if (!td_.contains(key)) {
    throw KeyError(fmt::format("TensorDictParams: key {} not found", text::key_str(key)));
  }
  check_write(key, std::nullopt);
  unlocked([&] {
    td_.del_(key);
    if (TensorDictParamsImpl* level = existing_level_of(key)) {
      const std::string& name = key.path().back();
      if (level->children_contains(name)) level->unregister_module(name);
      if (level->named_parameters(/*recurse=*/false).contains(name)) level->parameters_.erase(name);
    }
  });
  return *this;
}

void TensorDictParamsImpl::pretty_print(std::ostream& stream) const {
  stream << "TensorDictParams(params=" << repr(td_) << ")";
}

}  // namespace tensordict::nn
