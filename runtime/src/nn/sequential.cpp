// TensorDictSequential.
#include "tensordict/nn/sequential.h"
#include "tensordict/errors.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <typeinfo>

#include "nn/text.h"

namespace tensordict::nn {

namespace {

void check_names(const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name.empty() || name.find('.') != std::string::npos) {
      throw ValueError(
          fmt::format("TensorDictSequential: a module name must be non-empty and hold no '.', got '{}'", name));
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw ValueError(fmt::format("TensorDictSequential: two modules are named '{}'", name));
    }
  }
}

}  // namespace

// ---- construction ------------------------------------------------------------------------

std::vector<ModulePtr> TensorDictSequentialImpl::ptrs_of(const std::vector<ModuleRef>& refs) {
  std::vector<ModulePtr> out;
  out.reserve(refs.size());
  for (const auto& r : refs) out.push_back(r.ptr());
  return out;
}

std::vector<ModulePtr> TensorDictSequentialImpl::ptrs_of(const NamedModules& named) {
  std::vector<ModulePtr> out;
  out.reserve(named.size());
  for (const auto& [name, ref] : named) out.push_back(ref.ptr());
  return out;
}

std::vector<std::string> TensorDictSequentialImpl::names_of(const NamedModules& named) {
  std::vector<std::string> out;
  out.reserve(named.size());
  for (const auto& [name, ref] : named) out.push_back(name);
  return out;
}

std::pair<Keys, Keys> TensorDictSequentialImpl::compute_in_and_out_keys(const std::vector<ModulePtr>& modules) {
  Keys in_keys, out_keys;
  for (const auto& module : modules) {
    for (const auto& key : module->in_keys()) {
      if (!text::contains_key(in_keys, key) && !text::contains_key(out_keys, key)) in_keys.push_back(key);
    }
    out_keys.insert(out_keys.end(), module->out_keys().begin(), module->out_keys().end());
  }
  // A repeated key keeps its last position.
  Keys unique;
  for (std::size_t i = 0; i < out_keys.size(); ++i) {
    if (std::find(out_keys.begin() + static_cast<std::ptrdiff_t>(i) + 1, out_keys.end(), out_keys[i]) ==
        out_keys.end()) {
      unique.push_back(out_keys[i]);
    }
  }
  return {std::move(in_keys), std::move(unique)};
}

TensorDictSequentialImpl::TensorDictSequentialImpl(std::vector<ModulePtr> modules, std::vector<std::string> names,
                                                   const SequentialOptions& options)
    : TensorDictModuleBase({}, {}), partial_tolerant_(options.partial_tolerant), inplace_(options.inplace) {
  assign(std::move(modules), std::move(names));
  if (!options.selected_out_keys.empty()) select_out_keys(options.selected_out_keys);
}

TensorDictSequentialImpl::TensorDictSequentialImpl(std::vector<ModuleRef> modules, const SequentialOptions& options)
    : TensorDictSequentialImpl(ptrs_of(modules), {}, options) {}

TensorDictSequentialImpl::TensorDictSequentialImpl(NamedModules modules, const SequentialOptions& options)
    : TensorDictSequentialImpl(ptrs_of(modules), names_of(modules), options) {}

void TensorDictSequentialImpl::check_modules(const std::vector<ModulePtr>& modules) const {
  for (const auto& m : modules) {
    if (!m) throw ValueError("TensorDictSequential: a module is empty (nullptr)");
  }
}

void TensorDictSequentialImpl::assign(std::vector<ModulePtr> modules, std::vector<std::string> names) {
  check_modules(modules);
  check_names(names);
  auto [in_keys, out_keys] = compute_in_and_out_keys(modules);
  if (selected_out_keys_ && !std::all_of(selected_out_keys_->begin(), selected_out_keys_->end(),
                                         [&outs = out_keys](const NestedKey& k) { return text::contains_key(outs, k); })) {
    throw ValueError("All keys in selected_out_keys must be in out_keys.");
  }
  std::shared_ptr<torch::nn::Module> container;
  if (names.empty()) {
    torch::nn::ModuleList list;
    for (const auto& m : modules) list->push_back(m);
    container = list.ptr();
  } else {
    std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> items;
    for (std::size_t i = 0; i < modules.size(); ++i) items.emplace_back(names[i], modules[i]);
    container = torch::nn::ModuleDict(items).ptr();
  }
  if (named_children().contains("module")) {
    replace_module("module", container);
  } else {
    register_module("module", container);
  }
  modules_ = std::move(modules);
  names_ = std::move(names);
  in_keys_ = std::move(in_keys);
  out_keys_ = std::move(out_keys);
  modules_changed();
}

// ---- indexing ----------------------------------------------------------------------------

std::size_t TensorDictSequentialImpl::position(int64_t index) const {
  const auto n = static_cast<int64_t>(modules_.size());
  if (index < -n || index >= n) {
    throw IndexError(fmt::format("{}: index {} is out of range for a sequence of {} module(s)", type_name(), index, n));
  }
  return static_cast<std::size_t>(index < 0 ? index + n : index);
}

std::size_t TensorDictSequentialImpl::position(std::string_view name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    std::string known;
    for (const auto& n : names_) known += fmt::format("{}'{}'", known.empty() ? "" : ", ", n);
    throw KeyError(names_.empty()
                       ? fmt::format("{}: no module named '{}': the modules are not named", type_name(), name)
                       : fmt::format("{}: no module named '{}' (names: {})", type_name(), name, known));
  }
  return static_cast<std::size_t>(it - names_.begin());
}

const ModulePtr& TensorDictSequentialImpl::operator[](int64_t index) const { return modules_[position(index)]; }

const ModulePtr& TensorDictSequentialImpl::operator[](std::string_view name) const { return modules_[position(name)]; }

TensorDictSequential TensorDictSequentialImpl::slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                                                     int64_t step) const {
  if (step == 0) throw ValueError("slice step cannot be zero");
  // Python's slice.indices: bounds clamped to the sequence.
  const auto n = static_cast<int64_t>(modules_.size());
  auto bound = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v < 0 ? *v + n : *v;
    return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t first = bound(start, step > 0 ? 0 : n - 1);
  const int64_t last = bound(stop, step > 0 ? n : -1);
  std::vector<ModulePtr> modules;
  std::vector<std::string> names;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) {
    modules.push_back(modules_[static_cast<std::size_t>(i)]);
    if (!names_.empty()) names.push_back(names_[static_cast<std::size_t>(i)]);
  }
  return TensorDictSequential(make_like(std::move(modules), std::move(names)));
}

void TensorDictSequentialImpl::set(int64_t index, ModuleRef module) {
  std::vector<ModulePtr> modules = modules_;
  modules[position(index)] = module.ptr();
  assign(std::move(modules), names_);
}

void TensorDictSequentialImpl::set(std::string_view name, ModuleRef module) {
  set(static_cast<int64_t>(position(name)), std::move(module));
}

void TensorDictSequentialImpl::erase(int64_t index) {
  const std::size_t i = position(index);
  std::vector<ModulePtr> modules = modules_;
  std::vector<std::string> names = names_;
  modules.erase(modules.begin() + static_cast<std::ptrdiff_t>(i));
  if (!names.empty()) names.erase(names.begin() + static_cast<std::ptrdiff_t>(i));
  assign(std::move(modules), std::move(names));
}

void TensorDictSequentialImpl::erase(std::string_view name) { erase(static_cast<int64_t>(position(name))); }

// ---- running -----------------------------------------------------------------------------

void TensorDictSequentialImpl::check_selection(const Keys& keys) const {
  for (const auto& key : keys) {
    if (!text::contains_key(out_keys(), key)) {
      throw ValueError("All keys in selected_out_keys must be in out_keys.");
    }
  }
}

TensorDict TensorDictSequentialImpl::run_module(TensorDictModuleBase& module, const TensorDict& td) const {
  if (partial_tolerant_) {
    for (const auto& key : module.in_keys()) {
      if (!td.contains(key)) return td;  // dense rule: skip the module
    }
  }
  return module.run(td, std::nullopt);
}

TensorDict TensorDictSequentialImpl::execute(const TensorDict& td) {
  TensorDict current = td;
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    try {
      current = run_module(*modules_[i], current);
    } catch (...) {
      // tensordict notes which module failed (sequence.py: e.add_note): the
      // note on a line of its own, the error's kind kept.
      const std::string note =
          fmt::format("Failed while executing module '{}'.", names_.empty() ? std::to_string(i) : names_[i]);
      rethrow_reworded([&](std::string_view what) { return fmt::format("{}\n{}", what, note); });
    }
  }
  return current;
}

std::optional<TensorDict> TensorDictSequentialImpl::inplace_output(const TensorDict& td) const {
  if (inplace_ == Inplace::None) return std::nullopt;
  return output_for(td, inplace_);
}

TensorDict TensorDictSequentialImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  if (!out) {
    if (std::optional<TensorDict> dest = inplace_output(td)) {
      // sequence.py:632: the modules run on the input itself (each writes by
      // its own inplace rule), then the chain's out_keys go where inplace
      // says. (With a selection, `td` is already run_selecting's copy.)
      const TensorDict exec = execute(td);
      dest->update(exec, UpdateOptions{.keys_to_update = out_keys()});
      return *dest;
    }
  }
  return run_into(td, out, out_keys(),
                  [this](const TensorDict& t, const std::optional<TensorDict>&) { return execute(t); });
}

// ---- printing ----------------------------------------------------------------------------

std::string TensorDictSequentialImpl::repr() const {
  std::string list = names_.empty() ? "ModuleList(\n" : "ModuleDict(\n";
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    const std::string label = names_.empty() ? std::to_string(i) : names_[i];
    list += fmt::format("  ({}): {}\n", label, text::add_indent(modules_[i]->repr(), 2));
  }
  list += ")";
  return text::fields_repr(type_name(),
                           {"module=" + list, "device=" + device().str(), "in_keys=" + text::keys_repr(in_keys_),
                            "out_keys=" + text::keys_repr(out_keys())});
}

// ---- sub-sequences -----------------------------------------------------------------------

std::shared_ptr<TensorDictSequentialImpl> TensorDictSequentialImpl::make_like(std::vector<ModulePtr> modules,
                                                                              std::vector<std::string> names) const {
  return std::shared_ptr<TensorDictSequentialImpl>(
      new TensorDictSequentialImpl(std::move(modules), std::move(names),
                                   {.partial_tolerant = partial_tolerant_, .inplace = inplace_}));
}

TensorDictSequential TensorDictSequentialImpl::select_subsequence(std::optional<Keys> in_keys_opt,
                                                                  std::optional<Keys> out_keys_opt) const {
  // What the kept modules may read, and what they must produce.
  Keys available = in_keys_opt ? *in_keys_opt : in_keys_;
  Keys wanted = out_keys_opt ? *out_keys_opt : out_keys();
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
        modules[i] = static_cast<const TensorDictSequentialImpl&>(*modules[i]).select_subsequence(available).ptr();
      } catch (const std::invalid_argument&) {
        keep[i] = false;
        continue;
      }
    }
    const Keys& needed = modules[i]->in_keys();
    if (std::all_of(needed.begin(), needed.end(),
                    [&](const NestedKey& k) { return text::contains_key(available, k); })) {
      const Keys& produced = modules[i]->out_keys();
      available.insert(available.end(), produced.begin(), produced.end());
    } else {
      keep[i] = false;
    }
  }
  for (std::size_t j = modules.size(); j-- > 0;) {
    if (!keep[j]) continue;
    const Keys& produced = modules[j]->out_keys();
    if (std::any_of(produced.begin(), produced.end(),
                    [&](const NestedKey& k) { return text::contains_key(wanted, k); })) {
      if (is_plain_sequence(modules[j])) {
        modules[j] =
            static_cast<const TensorDictSequentialImpl&>(*modules[j]).select_subsequence(std::nullopt, wanted).ptr();
      }
      const Keys& needed = modules[j]->in_keys();
      wanted.insert(wanted.end(), needed.begin(), needed.end());
    } else {
      keep[j] = false;
    }
  }
  std::vector<ModulePtr> kept;
  std::vector<std::string> kept_names;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (!keep[i]) continue;
    kept.push_back(modules[i]);
    if (!names_.empty()) kept_names.push_back(names_[i]);
  }
  if (kept.empty()) {
    throw ValueError("No modules left after selection. Make sure that in_keys and out_keys are coherent.");
  }
  return TensorDictSequential(make_like(std::move(kept), std::move(kept_names)));
}

}  // namespace tensordict::nn
