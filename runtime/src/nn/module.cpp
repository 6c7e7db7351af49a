// TensorDictModule.
#include "tensordict/nn/module.h"
#include "tensordict/errors.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <exception>

#include "nn/text.h"

namespace tensordict::nn {

namespace {

void check_no_out_to_in_map(const TensorDictModuleOptions& options) {
  if (options.out_to_in_map) {
    throw ValueError("out_to_in_map is not None but is only used when in_key is a dictionary.");
  }
}

// A KeyMap read as tensordict does (common.py:1028-1042): the tensordict keys
// (in_keys) and the argument names, in the map's order.
std::pair<Keys, std::vector<std::string>> split_key_map(const KeyMap& map, bool out_to_in_map) {
  Keys keys;
  std::vector<std::string> names;
  for (const auto& [first, second] : map) {
    const NestedKey& name = out_to_in_map ? first : second;
    const NestedKey& key = out_to_in_map ? second : first;
    if (name.is_nested()) {
      throw ValueError(fmt::format("TensorDictModule: a keyword argument name must be a string, got {}", name.repr()));
    }
    if (std::find(names.begin(), names.end(), name.front()) != names.end()) {
      throw ValueError(fmt::format("TensorDictModule: keyword argument '{}' is mapped more than once", name.front()));
    }
    keys.push_back(key);
    names.push_back(name.front());
  }
  return {std::move(keys), std::move(names)};
}

std::vector<at::Tensor> any_value_to_tensors(torch::nn::AnyValue& value) {
  if (auto* t = value.try_get<at::Tensor>()) return {*t};
  if (auto* v = value.try_get<std::vector<at::Tensor>>()) return *v;
  if (auto* t2 = value.try_get<std::tuple<at::Tensor, at::Tensor>>()) return detail::to_tensor_list(*t2);
  if (auto* t3 = value.try_get<std::tuple<at::Tensor, at::Tensor, at::Tensor>>()) return detail::to_tensor_list(*t3);
  if (auto* t4 = value.try_get<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>>()) {
    return detail::to_tensor_list(*t4);
  }
  if (auto* lstm = value.try_get<std::tuple<at::Tensor, std::tuple<at::Tensor, at::Tensor>>>()) {
    return {std::get<0>(*lstm), std::get<0>(std::get<1>(*lstm)), std::get<1>(std::get<1>(*lstm))};
  }
  throw ValueError(fmt::format(
      "TensorDictModule: the wrapped module returned a {}; expected a tensor, a vector or a tuple of tensors",
      c10::demangle(value.type_info().name())));
}

}  // namespace

TensorDictModuleImpl::TensorDictModuleImpl(torch::nn::AnyModule module, Keys in_keys, Keys out_keys,
                                           TensorDictModuleOptions options)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)),
      module_(std::move(module)),
      options_(std::move(options)) {
  if (module_.is_empty()) throw ValueError("TensorDictModule: the wrapped AnyModule is empty");
  check_no_out_to_in_map(options_);
  register_module("module", module_.ptr());
}

TensorDictModuleImpl::TensorDictModuleImpl(Function fn, Keys in_keys, Keys out_keys, std::string name,
                                           TensorDictModuleOptions options)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)),
      fn_(std::move(fn)),
      fn_name_(std::move(name)),
      options_(std::move(options)) {
  if (!fn_) throw ValueError("TensorDictModule: the wrapped function is empty");
  check_no_out_to_in_map(options_);
}

TensorDictModuleImpl::TensorDictModuleImpl(std::shared_ptr<torch::nn::Module> module, Function fn, Keys in_keys,
                                           Keys out_keys, TensorDictModuleOptions options)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)),
      owner_(std::move(module)),
      fn_(std::move(fn)),
      options_(std::move(options)) {
  if (!owner_ || !fn_) throw ValueError("TensorDictModule: the wrapped module is empty");
  check_no_out_to_in_map(options_);
  register_module("module", owner_);
}

TensorDictModuleImpl::TensorDictModuleImpl(detail::KwargsFn fn, const KeyMap& in_keys, Keys out_keys, std::string name,
                                           TensorDictModuleOptions options)
    : TensorDictModuleBase({}, std::move(out_keys)), fn_name_(std::move(name)), options_(std::move(options)) {
  if (!fn) throw ValueError("TensorDictModule: the wrapped function is empty");
  auto [keys, names] = split_key_map(in_keys, options_.out_to_in_map.value_or(true));
  in_keys_ = std::move(keys);
  kwargs_ = names;
  fn_ = [fn = std::move(fn), names = std::move(names)](const std::vector<at::Tensor>& in) {
    return fn(Kwargs(names, in));
  };
}

std::vector<at::Tensor> TensorDictModuleImpl::call(const std::vector<at::Tensor>& in) {
  if (fn_) return fn_(in);
  torch::nn::AnyValue value = [&] {
    switch (in.size()) {
      case 0:
        return module_.any_forward();
      case 1:
        return module_.any_forward(in[0]);
      case 2:
        return module_.any_forward(in[0], in[1]);
      case 3:
        return module_.any_forward(in[0], in[1], in[2]);
      case 4:
        return module_.any_forward(in[0], in[1], in[2], in[3]);
      case 5:
        return module_.any_forward(in[0], in[1], in[2], in[3], in[4]);
      case 6:
        return module_.any_forward(in[0], in[1], in[2], in[3], in[4], in[5]);
      default:
        throw ValueError(
            fmt::format("TensorDictModule: {} inputs; at most 6 are supported for a wrapped torch module", in.size()));
    }
  }();
  return any_value_to_tensors(value);
}

std::vector<at::Tensor> TensorDictModuleImpl::call_reporting(const std::vector<at::Tensor>& inputs,
                                                             const Keys& missing) {
  if (missing.empty()) return call(inputs);
  // tensordict (common.py:1168-1177) raises this when the call fails while an
  // input is None; an undefined result passed through is the same failure.
  const std::string message = fmt::format(
      "Some tensors that are necessary for the module call may not have not been found in the input tensordict: "
      "the following inputs are None: {}.",
      text::key_set_repr(missing));
  std::vector<at::Tensor> outputs;
  try {
    outputs = call(inputs);
  } catch (const std::exception&) {
    std::throw_with_nested(KeyError(message));
  }
  for (std::size_t i = 0; i < outputs.size() && i < out_keys_.size(); ++i) {
    if (!outputs[i].defined() && !(out_keys_[i] == NestedKey("_"))) throw KeyError(message);
  }
  return outputs;
}

TensorDict TensorDictModuleImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  if (options_.strict) check_inputs(td, in_keys_);
  std::vector<at::Tensor> inputs;
  Keys missing;
  inputs.reserve(in_keys_.size());
  for (const auto& key : in_keys_) {
    if (options_.strict || td.contains(key)) {
      inputs.push_back(td.get(key));
    } else {
      inputs.emplace_back();  // tensordict passes None
      missing.push_back(key);
    }
  }
  std::vector<at::Tensor> outputs = call_reporting(inputs, missing);
  if (outputs.size() != out_keys_.size()) {
    throw RuntimeError(
        fmt::format("TensorDictModule: the module returned {} tensor(s) but out_keys={} expects {}", outputs.size(),
                    text::keys_repr(out_keys_), out_keys_.size()));
  }
  TensorDict dest = out ? *out : output_for(td, options_.inplace);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (out_keys_[i] == NestedKey("_")) continue;
    dest.set(out_keys_[i], outputs[i]);
  }
  return dest;
}

// ---- WrapModule ---------------------------------------------------------------------------

WrapModuleImpl::WrapModuleImpl(Function fn, WrapModuleOptions options)
    : TensorDictModuleBase(std::move(options.in_keys), std::move(options.out_keys)),
      fn_(std::move(fn)),
      inplace_(options.inplace) {
  if (!fn_) throw ValueError("WrapModule: the wrapped function is empty");
}

TensorDict WrapModuleImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  TensorDict result = fn_(td);
  if (out) {
    TensorDict dest = *out;
    return dest.update(result);
  }
  // common.py:1419: `result is not data`.
  if (inplace_ && result.impl() != td.impl()) {
    TensorDict dest = td;
    return dest.update(result);
  }
  return result;
}

std::string TensorDictModuleImpl::repr() const {
  const std::string module = owner_               ? text::torch_module_repr(*owner_)
                             : module_.is_empty() ? fn_name_
                                                  : text::torch_module_repr(*module_.ptr());
  return text::fields_repr(type_name(),
                           {"module=" + module, "device=" + device().str(), "in_keys=" + text::keys_repr(in_keys_),
                            "out_keys=" + text::keys_repr(out_keys())});
}

}  // namespace tensordict::nn
