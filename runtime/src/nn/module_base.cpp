// TensorDictModuleBase: calling conventions, out_keys selection, repr.
#include "tensordict/nn/module_base.h"
#include "tensordict/errors.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>

#include "nn/text.h"

namespace tensordict::nn {

TensorDictModuleBase::TensorDictModuleBase(Keys in_keys, Keys out_keys)
    : in_keys_(std::move(in_keys)), out_keys_(std::move(out_keys)) {}

void TensorDictModuleBase::check_inputs(const TensorDict& td, const Keys& keys) const {
  Keys missing;
  for (const auto& key : keys) {
    if (!td.contains(key)) missing.push_back(key);
  }
  if (!missing.empty()) {
    throw KeyError(fmt::format("{}: input key(s) {} not found in the tensordict (in_keys={}, tensordict keys={})",
                               type_name(), text::keys_repr(missing), text::keys_repr(in_keys_),
                               text::keys_repr(td.keys({.include_nested = true}))));
  }
}

void TensorDictModuleBase::check_schema(std::string_view) const {}

// ---- selection -----------------------------------------------------------------------

void TensorDictModuleBase::check_selection(const Keys& keys) const {
  const Keys& current = out_keys();
  if (keys.size() == 1 && !text::contains_key(current, keys[0])) {
    const NestedKey& key = keys[0];
    std::string message = fmt::format("Can't select non existent key: {}. ", text::key_str(key));
    // A key made of the keys meant (select_out_keys({{"d", "e"}}) for "d", "e").
    if (key.is_nested() && text::contains_key(current, NestedKey(key.front()))) {
      std::string parts;
      for (const auto& part : key.path()) parts += (parts.empty() ? "" : ", ") + part;
      message += fmt::format("Are you passing the keys in a list? Try unpacking as: `{}`", parts);
    }
    throw ValueError(message);
  }
  for (const auto& key : keys) {
    if (!text::contains_key(current, key)) throw RuntimeError("Some keys are not part of the module out_keys.");
  }
}

TensorDictModuleBase& TensorDictModuleBase::select_out_keys(const Keys& keys) {
  check_selection(keys);
  selected_out_keys_ = keys;
  return *this;
}

TensorDictModuleBase& TensorDictModuleBase::reset_out_keys() {
  selected_out_keys_.reset();
  return *this;
}

// ---- running -------------------------------------------------------------------------

TensorDict TensorDictModuleBase::run(const TensorDict& td, const std::optional<TensorDict>& out) {
  return run_selecting(
      td, out, [this](const TensorDict& t, const std::optional<TensorDict>& o) { return run_impl(t, o); });
}

TensorDict TensorDictModuleBase::run_into(const TensorDict& td, const std::optional<TensorDict>& out,
                                              const Keys& keys, const Body& body) {
  if (!out) return body(td, std::nullopt);
  const TensorDict exec = body(TensorDict(td.clone(/*recurse=*/{.recurse = false})), std::nullopt);
  TensorDict dest = *out;
  dest.update(exec, UpdateOptions{.keys_to_update = keys});
  return dest;
}

TensorDict TensorDictModuleBase::run_selecting(const TensorDict& td, const std::optional<TensorDict>& out,
                                                   const Body& body) {
  if (!selected_out_keys_) return body(td, out);
  // A sequence's `inplace` output gets only the selected keys, as a given
  // one does (sequence.py:625-657): with inplace=False/"empty" the input is
  // left alone.
  const std::optional<TensorDict> target = out ? out : inplace_output(td);
  if (target) return run_into(td, target, *selected_out_keys_, body);
  const TensorDict exec = body(TensorDict(td.clone(/*recurse=*/{.recurse = false})), std::nullopt);
  // The selected outputs, and the input's leaves with the values the modules
  // gave them (an in_key a module overwrote keeps the new value).
  Keys keys = *selected_out_keys_;
  for (auto& key : td.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (!text::contains_key(keys, key)) keys.push_back(std::move(key));
  }
  TensorDict dest = td;
  dest.update(exec, UpdateOptions{.keys_to_update = std::move(keys)});
  return dest;
}

std::optional<TensorDict> TensorDictModuleBase::inplace_output(const TensorDict&) const { return std::nullopt; }

TensorDict TensorDictModuleBase::output_for(const TensorDict& td, Inplace inplace) {
  switch (inplace) {
    case Inplace::True:
      return td;
    case Inplace::Empty:
      return td.empty();
    case Inplace::None:
    case Inplace::False:
      break;
  }
  return TensorDict();
}

std::vector<at::Tensor> TensorDictModuleBase::forward_tensors(const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != in_keys_.size()) {
    throw ValueError(fmt::format("{}: got {} tensor(s) for in_keys={} ({} expected)", type_name(), tensors.size(),
                                 text::keys_repr(in_keys_), in_keys_.size()));
  }
  // tensordict's dispatch(auto_batch_size=False): a tensordict of batch size [].
  TensorDict td;
  for (std::size_t i = 0; i < tensors.size(); ++i) td.set(in_keys_[i], tensors[i]);
  TensorDict result = run(td, std::nullopt);
  std::vector<at::Tensor> out;
  for (const auto& key : out_keys()) {
    if (key == NestedKey("_")) continue;
    out.push_back(result.get(key));
  }
  return out;
}

// ---- printing ------------------------------------------------------------------------

std::string TensorDictModuleBase::repr() const {
  return text::fields_repr(type_name(), {"device=" + device().str(), "in_keys=" + text::keys_repr(in_keys_),
                                         "out_keys=" + text::keys_repr(out_keys())});
}

at::Device TensorDictModuleBase::device() const {
  for (const auto& p : parameters()) return p.device();
  return at::Device(at::kCPU);
}

std::ostream& operator<<(std::ostream& os, const TensorDictModuleBase& module) { return os << module.repr(); }

}  // namespace tensordict::nn
