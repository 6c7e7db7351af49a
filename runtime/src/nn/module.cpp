// TensorDictModule and TensorDictSequential.
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <sstream>
#include <typeinfo>

#include "tensordict/nn/module.h"
#include "tensordict/nn/sequential.h"
#include "tensordict/repr.h"

namespace tensordict::nn {

namespace {

bool contains_key(const Keys& keys, const NestedKey& key) { return std::find(keys.begin(), keys.end(), key) != keys.end(); }

std::string keys_repr(const Keys& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    out += keys[i].repr();
  }
  return out + "]";
}

// Every line after the first indented by n (Python's torch.nn _addindent).
std::string add_indent(const std::string& text, std::size_t n) {
  std::string out;
  const std::string pad(n, ' ');
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

// Every line indented by n (textwrap.indent).
std::string indent(const std::string& text, std::size_t n) { return std::string(n, ' ') + add_indent(text, n); }

std::string device_repr(const at::Device& device) { return device.str(); }

// A libtorch module printed like Python: without the "torch::nn::" prefix.
std::string torch_module_repr(const torch::nn::Module& module) {
  std::ostringstream os;
  os << module;
  std::string text = os.str();
  const std::string prefix = "torch::nn::";
  for (std::size_t pos = text.find(prefix); pos != std::string::npos; pos = text.find(prefix, pos)) {
    text.erase(pos, prefix.size());
  }
  return text;
}

std::string fields_repr(std::string_view type, const std::vector<std::string>& fields) {
  std::string body;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) body += ",\n";
    body += fields[i];
  }
  return fmt::format("{}(\n{})", type, indent(body, 4));
}

}  // namespace

namespace detail {
void check_arity(std::size_t expected, std::size_t got) {
  if (expected != got) {
    throw std::invalid_argument(
        fmt::format("TensorDictModule: the wrapped function takes {} tensor(s) but {} were given", expected, got));
  }
}
}  // namespace detail

// ---- TensorDictModuleBase ------------------------------------------------------

TensorDictModuleBase::TensorDictModuleBase(Keys in_keys, Keys out_keys)
    : in_keys_(std::move(in_keys)), out_keys_(std::move(out_keys)) {}

void TensorDictModuleBase::check_inputs(const TensorDictBase& td, const Keys& keys) const {
  Keys missing;
  for (const auto& key : keys) {
    if (!td.contains(key)) missing.push_back(key);
  }
  if (!missing.empty()) {
    throw KeyError(fmt::format("{}: input key(s) {} not found in the tensordict (in_keys={}, tensordict keys={})",
                               type_name(), keys_repr(missing), keys_repr(in_keys_),
                               keys_repr(td.keys(/*include_nested=*/true))));
  }
}

std::vector<at::Tensor> TensorDictModuleBase::forward_tensors(const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != in_keys_.size()) {
    throw std::invalid_argument(fmt::format("{}: got {} tensor(s) for in_keys={} ({} expected)", type_name(),
                                            tensors.size(), keys_repr(in_keys_), in_keys_.size()));
  }
  // tensordict's dispatch(auto_batch_size=False): a tensordict of batch size [].
  TensorDict td;
  for (std::size_t i = 0; i < tensors.size(); ++i) td.set(in_keys_[i], tensors[i]);
  TensorDictBase result = run(td, std::nullopt);
  std::vector<at::Tensor> out;
  for (const auto& key : out_keys_) {
    if (key == NestedKey("_")) continue;
    out.push_back(result.get(key));
  }
  return out;
}

std::string TensorDictModuleBase::repr() const {
  return fields_repr(type_name(), {"device=" + device_repr(device()), "in_keys=" + keys_repr(in_keys_),
                                   "out_keys=" + keys_repr(out_keys_)});
}

at::Device TensorDictModuleBase::device() const {
  for (const auto& p : parameters()) return p.device();
  return at::Device(at::kCPU);
}

std::ostream& operator<<(std::ostream& os, const TensorDictModuleBase& module) { return os << module.repr(); }

// ---- TensorDictModule ------------------------------------------------------------

TensorDictModuleImpl::TensorDictModuleImpl(torch::nn::AnyModule module, Keys in_keys, Keys out_keys)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)), module_(std::move(module)) {
  if (module_.is_empty()) throw std::invalid_argument("TensorDictModule: the wrapped AnyModule is empty");
  register_module("module", module_.ptr());
}

TensorDictModuleImpl::TensorDictModuleImpl(Function fn, Keys in_keys, Keys out_keys, std::string name)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)), fn_(std::move(fn)), fn_name_(std::move(name)) {
  if (!fn_) throw std::invalid_argument("TensorDictModule: the wrapped function is empty");
}

TensorDictModuleImpl::TensorDictModuleImpl(std::shared_ptr<torch::nn::Module> module, Function fn, Keys in_keys,
                                           Keys out_keys)
    : TensorDictModuleBase(std::move(in_keys), std::move(out_keys)), owner_(std::move(module)), fn_(std::move(fn)) {
  if (!owner_ || !fn_) throw std::invalid_argument("TensorDictModule: the wrapped module is empty");
  register_module("module", owner_);
}

namespace {

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
  throw std::invalid_argument(fmt::format(
      "TensorDictModule: the wrapped module returned a {}; expected a tensor, a vector or a tuple of tensors",
      c10::demangle(value.type_info().name())));
}

}  // namespace

std::vector<at::Tensor> TensorDictModuleImpl::call(const std::vector<at::Tensor>& in) {
  if (fn_) return fn_(in);
  torch::nn::AnyValue value = [&] {
    switch (in.size()) {
      case 0: return module_.any_forward();
      case 1: return module_.any_forward(in[0]);
      case 2: return module_.any_forward(in[0], in[1]);
      case 3: return module_.any_forward(in[0], in[1], in[2]);
      case 4: return module_.any_forward(in[0], in[1], in[2], in[3]);
      case 5: return module_.any_forward(in[0], in[1], in[2], in[3], in[4]);
      case 6: return module_.any_forward(in[0], in[1], in[2], in[3], in[4], in[5]);
      default:
        throw std::invalid_argument(
            fmt::format("TensorDictModule: {} inputs; at most 6 are supported for a wrapped torch module", in.size()));
    }
  }();
  return any_value_to_tensors(value);
}

TensorDictBase TensorDictModuleImpl::run(const TensorDictBase& td, const std::optional<TensorDictBase>& out) {
  check_inputs(td, in_keys_);
  std::vector<at::Tensor> inputs;
  inputs.reserve(in_keys_.size());
  for (const auto& key : in_keys_) inputs.push_back(td.get(key));
  std::vector<at::Tensor> outputs = call(inputs);
  if (outputs.size() != out_keys_.size()) {
    throw std::runtime_error(fmt::format("TensorDictModule: the module returned {} tensor(s) but out_keys={} expects {}",
                                         outputs.size(), keys_repr(out_keys_), out_keys_.size()));
  }
  TensorDictBase dest = out ? *out : td;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (out_keys_[i] == NestedKey("_")) continue;
    dest.set(out_keys_[i], outputs[i]);
  }
  return dest;
}

std::string TensorDictModuleImpl::repr() const {
  const std::string module = owner_ ? torch_module_repr(*owner_) : fn_ ? fn_name_ : torch_module_repr(*module_.ptr());
  return fields_repr(type_name(), {"module=" + module, "device=" + device_repr(device()),
                                   "in_keys=" + keys_repr(in_keys_), "out_keys=" + keys_repr(out_keys_)});
}

// ---- TensorDictSequential --------------------------------------------------------

std::pair<Keys, Keys> TensorDictSequentialImpl::compute_in_and_out_keys(const std::vector<ModulePtr>& modules) {
  Keys in_keys, out_keys;
  for (const auto& module : modules) {
    for (const auto& key : module->in_keys()) {
      if (!contains_key(in_keys, key) && !contains_key(out_keys, key)) in_keys.push_back(key);
    }
    out_keys.insert(out_keys.end(), module->out_keys().begin(), module->out_keys().end());
  }
  // A repeated key keeps its last position.
  Keys unique;
  for (std::size_t i = 0; i < out_keys.size(); ++i) {
    if (std::find(out_keys.begin() + static_cast<std::ptrdiff_t>(i) + 1, out_keys.end(), out_keys[i]) == out_keys.end()) {
      unique.push_back(out_keys[i]);
    }
  }
  return {std::move(in_keys), std::move(unique)};
}

namespace {
std::vector<ModulePtr> to_ptrs(const std::vector<ModuleRef>& refs) {
  std::vector<ModulePtr> out;
  out.reserve(refs.size());
  for (const auto& r : refs) {
    if (!r.ptr()) throw std::invalid_argument("TensorDictSequential: a module is empty (nullptr)");
    out.push_back(r.ptr());
  }
  return out;
}
}  // namespace

TensorDictSequentialImpl::TensorDictSequentialImpl(std::vector<ModuleRef> modules, bool partial_tolerant)
    : TensorDictModuleBase({}, {}), modules_(to_ptrs(modules)), partial_tolerant_(partial_tolerant) {
  std::tie(in_keys_, out_keys_) = compute_in_and_out_keys(modules_);
  for (const auto& m : modules_) list_->push_back(m);
  register_module("module", list_);
}

TensorDictBase TensorDictSequentialImpl::run_module(TensorDictModuleBase& module, const TensorDictBase& td) const {
  if (partial_tolerant_) {
    for (const auto& key : module.in_keys()) {
      if (!td.contains(key)) return td;  // dense rule: skip the module
    }
  }
  return module.run(td, std::nullopt);
}

TensorDictBase TensorDictSequentialImpl::run(const TensorDictBase& td, const std::optional<TensorDictBase>& out) {
  // With an output tensordict the modules run on a shallow copy, so the input
  // keeps its keys, and only the out_keys reach `out` (tensordict's
  // nn/sequence.py forward).
  TensorDictBase current = out ? TensorDictBase(td.clone(false)) : td;
  for (const auto& module : modules_) current = run_module(*module, current);
  if (!out) return current;
  TensorDictBase dest = *out;
  for (const auto& key : out_keys_) {
    if (auto value = current.get_value(key)) dest.set(key, std::move(*value));
  }
  return dest;
}

std::string TensorDictSequentialImpl::repr() const {
  std::string list = "ModuleList(\n";
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    list += fmt::format("  ({}): {}\n", i, add_indent(modules_[i]->repr(), 2));
  }
  list += ")";
  return fields_repr(type_name(), {"module=" + list, "device=" + device_repr(device()),
                                   "in_keys=" + keys_repr(in_keys_), "out_keys=" + keys_repr(out_keys_)});
}

std::shared_ptr<TensorDictSequentialImpl> TensorDictSequentialImpl::make_like(std::vector<ModuleRef> modules) const {
  return std::make_shared<TensorDictSequentialImpl>(std::move(modules), partial_tolerant_);
}

TensorDictSequential TensorDictSequentialImpl::select_subsequence(std::optional<Keys> in_keys_opt,
                                                                  std::optional<Keys> out_keys_opt) const {
  Keys in_keys = in_keys_opt ? *in_keys_opt : in_keys_;
  Keys out_keys = out_keys_opt ? *out_keys_opt : out_keys_;
  std::vector<ModulePtr> modules = modules_;
  std::vector<bool> keep(modules.size(), true);
  // A plain TensorDictSequential (not a subclass) is pruned recursively.
  auto is_plain_sequence = [](const ModulePtr& m) {
    const auto& module = *m;  // not inside typeid: clang warns of the call's side effects there
    return typeid(module) == typeid(TensorDictSequentialImpl);
  };

  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (is_plain_sequence(modules[i])) {
      try {
        modules[i] = static_cast<const TensorDictSequentialImpl&>(*modules[i]).select_subsequence(in_keys).ptr();
      } catch (const std::invalid_argument&) {
        keep[i] = false;
        continue;
      }
    }
    const Keys& needed = modules[i]->in_keys();
    if (std::all_of(needed.begin(), needed.end(), [&](const NestedKey& k) { return contains_key(in_keys, k); })) {
      const Keys& produced = modules[i]->out_keys();
      in_keys.insert(in_keys.end(), produced.begin(), produced.end());
    } else {
      keep[i] = false;
    }
  }
  for (std::size_t j = modules.size(); j-- > 0;) {
    if (!keep[j]) continue;
    const Keys& produced = modules[j]->out_keys();
    if (std::any_of(produced.begin(), produced.end(), [&](const NestedKey& k) { return contains_key(out_keys, k); })) {
      if (is_plain_sequence(modules[j])) {
        modules[j] = static_cast<const TensorDictSequentialImpl&>(*modules[j])
                         .select_subsequence(std::nullopt, out_keys)
                         .ptr();
      }
      const Keys& needed = modules[j]->in_keys();
      out_keys.insert(out_keys.end(), needed.begin(), needed.end());
    } else {
      keep[j] = false;
    }
  }
  std::vector<ModuleRef> kept;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (keep[i]) kept.emplace_back(modules[i]);
  }
  if (kept.empty()) {
    throw std::invalid_argument(
        "No modules left after selection. Make sure that in_keys and out_keys are coherent.");
  }
  return TensorDictSequential(make_like(std::move(kept)));
}

}  // namespace tensordict::nn
