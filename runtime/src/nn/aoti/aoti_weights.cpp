// Live weights of an AOTInductor package: from_module and to_module.
//
// A package exported with swappable weights (tensorclass.export's default)
// keeps every parameter and buffer as a constant, in two buffers: the active
// one the model runs with, and an inactive one. An update writes the new
// values into the inactive buffer while calls go on, folds the package's own
// constants if it folds at run time, and swaps it in; torch's container
// takes the swap under the lock each call holds while it runs, so a call
// sees one buffer whole.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "nn/aoti/aoti_loader.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"

namespace tensordict::nn {
namespace {

using Loader = AOTIModuleImpl::Loader;
using ConstantMap = std::unordered_map<std::string, at::Tensor>;

void check_swappable(const std::string& path, const AOTISpec& spec, std::string_view call) {
  if (spec.swappable_weights) return;
  throw RuntimeError(fmt::format(
      "{}: package '{}' was exported without swappable weights, so some are folded into its code; export it again "
      "with tensorclass.export.export(..., swappable_weights=True) (the default) to update its weights",
      call, path));
}

// The leaves of `td` by key (non-tensor values too: they are refused by key).
void leaves(const TensorDict& td, std::vector<std::string>& path, std::map<NestedKey, Value>& out) {
  for (const auto& [key, value] : td.items()) {
    path.push_back(key.front());
    if (value.is_tensordict()) {
      leaves(value.tensordict(), path, out);
    } else {
      out.emplace(NestedKey(path), value);
    }
    path.pop_back();
  }
}

std::string shape_text(at::IntArrayRef shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// A tensor torch's copy can take as it is: the container copies a source's
// whole storage from its data pointer, so the source must be contiguous and
// span its storage exactly (a leaf of a consolidated tensordict is a view
// into a larger one).
at::Tensor compact(const at::Tensor& t) {
  const bool exact = t.is_contiguous() && t.storage_offset() == 0 &&
                     t.storage().nbytes() == static_cast<std::size_t>(t.numel()) * t.element_size();
  return exact ? t : t.clone(at::MemoryFormat::Contiguous);
}

// The package's name for each weight's constant, by fqn.
const std::string& constant_name(Loader& loader, const AOTIWeight& weight) {
  if (loader.constant_names.empty()) {
    for (const auto& [name, fqn] : loader.loader.get_runner()->getConstantNamesToOriginalFQNs()) {
      loader.constant_names[fqn] = name;
    }
  }
  const auto it = loader.constant_names.find(weight.fqn);
  if (it == loader.constant_names.end()) {
    throw RuntimeError(fmt::format("AOTIModule: the package has no constant '{}' for the weight {}", weight.fqn,
                                   weight.key.repr()));
  }
  return it->second;
}

// The values of `params` (checked against the spec) by constant name; the
// weights it leaves out (with `partial`) from the active buffer, so that the
// inactive buffer is whole after the copy.
ConstantMap constants_of(const std::string& path, const AOTISpec& spec, Loader& loader, const TensorDict& params,
                         const ToModuleOptions& options) {
  auto* runner = loader.loader.get_runner();
  std::map<NestedKey, Value> given;
  std::vector<std::string> at;
  leaves(params, at, given);
  const c10::DeviceType device_type = spec.device_type == "cuda" ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  const std::string prefix = fmt::format("to_module(AOTIModule('{}'))", path);
  ConstantMap out;
  ConstantMap active;
  for (const AOTIWeight& weight : spec.weights) {
    const std::string& name = constant_name(loader, weight);
    const auto it = given.find(weight.key);
    if (it == given.end()) {
      if (!options.partial) {
        throw KeyError(fmt::format("{}: params have no weight {} (the package takes all {} of its weights; "
                                   "{{.partial = true}} keeps the others)",
                                   prefix, weight.key.repr(), spec.weights.size()));
      }
      if (active.empty()) active = runner->extract_constants_map(/*use_inactive=*/false);
      out.emplace(name, active.at(weight.fqn));
      continue;
    }
    if (!it->second.is_tensor()) {
      throw TypeError(fmt::format("{}: params' {} is not a tensor", prefix, weight.key.repr()));
    }
    const at::Tensor& t = it->second.tensor();
    if (t.scalar_type() != weight.dtype) {
      throw TypeError(fmt::format("{}: weight {} has dtype {}, the package's is {}", prefix, weight.key.repr(),
                                  dtype_name(t.scalar_type()), dtype_name(weight.dtype)));
    }
    if (t.sizes() != at::IntArrayRef(weight.shape)) {
      throw ValueError(fmt::format("{}: weight {} has shape {}, the package's is {}", prefix, weight.key.repr(),
                                   shape_text(t.sizes()), shape_text(weight.shape)));
    }
    if (t.device().type() != device_type && !t.device().is_cpu()) {
      throw RuntimeError(fmt::format("{}: weight {} is on {}, the package runs on {} (or give it on the cpu)",
                                     prefix, weight.key.repr(), t.device().str(), spec.device_type));
    }
    out.emplace(name, t);
    given.erase(it);
  }
  if (!given.empty()) {
    throw KeyError(fmt::format("{}: the package has no weight {}", prefix, given.begin()->first.repr()));
  }
  return out;
}

// Copies `constants` into the inactive buffer, folds its constants (for a
// package that folds at run time) and swaps it in (the caller holds the
// update lock). CPU values into a CUDA package take one
// host-to-device copy each.
void write_and_swap(const AOTISpec& spec, Loader& loader, ConstantMap constants) {
  auto* runner = loader.loader.get_runner();
  bool from_cpu = false;
  if (spec.device_type == "cuda") {
    const auto on_device = std::find_if(constants.begin(), constants.end(),
                                        [](const auto& item) { return !item.second.is_cpu(); });
    const bool any_cpu = std::any_of(constants.begin(), constants.end(),
                                     [](const auto& item) { return item.second.is_cpu(); });
    from_cpu = on_device == constants.end();
    if (any_cpu && !from_cpu) {
      // Some of each: torch's update takes one kind of source per call (a
      // second call would copy the first one's buffers over), so the CPU
      // values go to the device first.
      const at::Device device = on_device->second.device();
      for (auto& [name, t] : constants) t = t.to(device);
    }
  }
  for (auto& [name, t] : constants) t = compact(t);
  if (from_cpu) {
    runner->update_constant_buffer_from_cpu(constants, /*use_inactive=*/true, /*validate_full_updates=*/false);
  } else {
    runner->update_constant_buffer(constants, /*use_inactive=*/true, /*validate_full_updates=*/false);
  }
  if (spec.runtime_folding) runner->run_const_fold(/*use_inactive=*/true);
  runner->swap_constant_buffer();
  loader.inactive_whole = true;
}


// The weights in the buffer the model runs with (use_inactive: the other
// one), copied, keyed as from_module keys them.
TensorDict copy_weights(const AOTISpec& spec, Loader& loader, bool use_inactive) {
  const ConstantMap constants = loader.loader.get_runner()->extract_constants_map(use_inactive);
  TensorDict td;
  for (const AOTIWeight& weight : spec.weights) {
    const auto it = constants.find(weight.fqn);
    if (it != constants.end()) td.set(weight.key, it->second.clone());
  }
  return td;
}

// Before the inactive buffer is overwritten: the guard whose former weights
// it holds gets a copy of them.
void keep_inactive(const AOTISpec& spec, Loader& loader) {
  if (const auto undo = loader.inactive_holds.lock(); undo && !undo->saved) {
    undo->saved = copy_weights(spec, loader, /*use_inactive=*/true);
  }
  loader.inactive_holds.reset();
}

}  // namespace

TensorDict AOTIModuleImpl::weights() const {
  check_swappable(path_, spec_, "from_module(AOTIModule)");
  std::lock_guard lock(loader_->update_mutex);
  return copy_weights(spec_, *loader_, /*use_inactive=*/false);
}

void AOTIModuleImpl::load_weights(const TensorDict& params, const ToModuleOptions& options, ToModuleGuard& guard) {
  check_swappable(path_, spec_, "to_module(AOTIModule)");
  std::lock_guard lock(loader_->update_mutex);
  ConstantMap constants = constants_of(path_, spec_, *loader_, params, options);
  keep_inactive(spec_, *loader_);
  try {
    write_and_swap(spec_, *loader_, std::move(constants));
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view what) {
      return fmt::format("to_module(AOTIModule('{}')): loading the weights failed: {}", path_, what);
    });
  }
  auto undo = std::make_shared<Loader::Undo>();
  loader_->inactive_holds = undo;
  // The step holds the loader and a copy of the spec, not the module: a
  // guard may outlive the module, never the package.
  guard.on_restore([loader = loader_, undo, spec = std::make_shared<const AOTISpec>(spec_)]() noexcept {
    std::lock_guard lock(loader->update_mutex);
    try {
      if (loader->inactive_holds.lock() == undo) {
        // Nothing was loaded since: the inactive buffer holds the former
        // weights, folded.
        loader->loader.get_runner()->swap_constant_buffer();
        loader->inactive_holds.reset();
      } else if (undo->saved) {
        write_and_swap(*spec, *loader, [&] {
          ConstantMap constants;
          for (const AOTIWeight& weight : spec->weights) {
            constants.emplace(constant_name(*loader, weight), undo->saved->get(weight.key));
          }
          keep_inactive(*spec, *loader);
          return constants;
        }());
      }
    } catch (...) {
      // A restore of values the package held before cannot fail but for
      // memory; a destructor has no way to say so.
    }
  });
}

void AOTIModuleImpl::update_weights(const std::function<void(const TensorDict&)>& write) {
  check_swappable(path_, spec_, "update_weights(AOTIModule)");
  std::lock_guard lock(loader_->update_mutex);
  Loader& loader = *loader_;
  auto* runner = loader.loader.get_runner();
  keep_inactive(spec_, loader);
  if (!loader.inactive_whole) {
    // The inactive buffer is allocated by the first update: a copy of the
    // active one makes it whole, so that every constant has its place.
    const ConstantMap active = runner->extract_constants_map(/*use_inactive=*/false);
    ConstantMap constants;
    for (const AOTIWeight& weight : spec_.weights) constants.emplace(constant_name(loader, weight), active.at(weight.fqn));
    runner->update_constant_buffer(constants, /*use_inactive=*/true, /*validate_full_updates=*/false);
    loader.inactive_whole = true;
  }
  // The inactive buffer's own tensors: what `write` writes lands in the
  // package.
  const ConstantMap inactive = runner->extract_constants_map(/*use_inactive=*/true);
  TensorDict params;
  for (const AOTIWeight& weight : spec_.weights) params.set(weight.key, inactive.at(weight.fqn));
  write(params);
  for (const AOTIWeight& weight : spec_.weights) {
    const at::Tensor now = params.get(weight.key, at::Tensor());
    if (!now.defined() || now.data_ptr() != inactive.at(weight.fqn).data_ptr()) {
      throw ValueError(fmt::format("update_weights(AOTIModule('{}')): the update replaced weight {} instead of "
                                   "writing into it (nothing was loaded)",
                                   path_, weight.key.repr()));
    }
  }
  if (spec_.runtime_folding) runner->run_const_fold(/*use_inactive=*/true);
  runner->swap_constant_buffer();
}

}  // namespace tensordict::nn
