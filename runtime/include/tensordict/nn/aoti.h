// AOTIModule: a tensordict module that runs an AOTInductor package (.pt2)
// exported from Python by tensorclass.export (python/tensorclass/export.py).
//
// Part of tensorclass::aoti, an optional library: it needs libtorch 2.x's
// AOTInductor loader (torch/csrc/inductor/aoti_package), so the build against
// Debian's libtorch 1.13 goes without it. The loader's headers stay in the
// library's sources: this header needs only what <tensordict/nn.h> needs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensordict/nn/module_base.h"
#include "tensordict/nn/weights.h"

namespace tensordict::nn {

// One input or output of a package, as its metadata records it.
struct AOTIEntry {
  NestedKey key;
  // The keyword argument the package takes the input as (a nested key's
  // parts joined by "_", tensordict's dispatch rule); empty for an output.
  std::string arg;
  at::ScalarType dtype = at::kFloat;
  // The shape past the batch dims.
  std::vector<int64_t> event_shape;
};

// One weight (parameter or buffer) of a package, as its metadata records it.
struct AOTIWeight {
  // Its key in TensorDict.from_module(module): module.0.weight is
  // ("module", "0", "weight").
  NestedKey key;
  // The package's name for the constant holding it (the module's fqn).
  std::string fqn;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
};

// What a package takes and gives, from its metadata.
struct AOTISpec {
  std::vector<AOTIEntry> inputs;   // in the order the package takes them
  std::vector<AOTIEntry> outputs;  // in the order it returns them
  // The example's batch size; with dynamic_batch, only its number of dims
  // binds.
  std::vector<int64_t> batch_size;
  bool dynamic_batch = false;
  // The Python class of the example ("<class 'robot.PolicyStep'>"), when it
  // was a tensorclass: a generated struct run through the module must be of
  // that schema.
  std::optional<std::string> schema;
  // The device type the package was compiled for ("cpu", "cuda").
  std::string device_type;
  // The interaction type it was exported under ("deterministic", "random",
  // ...: tensorclass.export's interaction_type, baked into the code); empty
  // for packages exported before it was recorded.
  std::string interaction_type;
  // Its weights, in from_module's order, and whether each stayed a constant
  // that to_module can replace (tensorclass.export's swappable_weights, the
  // default).
  std::vector<AOTIWeight> weights;
  bool swappable_weights = false;
  // The package also folds constants of its own at run time (a constant
  // made in forward): an update folds them again before the swap.
  bool runtime_folding = false;
};

// Options in the library's one style (op_options.h):
//   AOTIModule("policy.pt2", {.model_name = "model"})
struct AOTIModuleOptions {
  // The model inside the package (aoti_compile_and_package's default).
  std::string model_name = "model";
  // The CUDA device a CUDA package runs on (-1: the current one).
  int8_t device_index = -1;
};

// Runs a package on a tensordict: reads the spec's inputs by key (checking
// dtype, batch dims and event shape against the package), calls the model,
// and writes its outputs at out_keys (into the input, or into `out`). A
// TensorDictModuleBase: it goes into a TensorDictSequential, takes
// select_out_keys, runs on generated structs.
//
// Errors name the package and the key: a missing input (KeyError), a wrong
// dtype (TypeError) or shape (ValueError), an input on another device
// (RuntimeError), a package that is not a readable AOTInductor package, has
// no tensorclass metadata, has a newer metadata format, or was compiled for a
// device this libtorch lacks (RuntimeError, from the constructor).
//
// Live weights: from_module(policy) gives the package's weights (copies) and
// to_module(policy, params) loads new ones while other threads keep calling
// the module: the values go into the package's inactive constant buffer,
// which is then swapped in whole, so a call sees the old weights or the new
// ones, never a mix. No recompilation, no file written.
class AOTIModuleImpl : public TensorDictModuleBase, public WeightsHolder {
 public:
  explicit AOTIModuleImpl(std::string package_path, AOTIModuleOptions options = {});
  ~AOTIModuleImpl() override;

  std::string_view type_name() const override { return "AOTIModule"; }
  std::string repr() const override;

  const std::string& package_path() const { return path_; }
  const AOTISpec& spec() const { return spec_; }
  // The package's metadata (aoti_compile_and_package's
  // "aot_inductor.metadata" and AOTInductor's own entries).
  const std::unordered_map<std::string, std::string>& metadata() const { return metadata_; }
  // Calls the model on tensors in the spec's input order (no checks): the
  // loader's own call.
  std::vector<at::Tensor> run_tensors(const std::vector<at::Tensor>& inputs);

  // from_module(policy): the package's weights, keyed as Python's
  // TensorDict.from_module(module) keys the exported module. Copies (on the
  // package's device) of the values the module runs with now: later updates
  // do not change them. RuntimeError for a package whose weights are not
  // swappable (exported with swappable_weights=False, or before it existed).
  TensorDict weights() const override;
  // to_module(policy, params): checks every key, dtype, shape and device of
  // `params` against the package before anything changes (a missing weight,
  // unless options.partial, or an unknown key: KeyError; another dtype:
  // TypeError; another shape: ValueError; another device: RuntimeError; a
  // non-tensor: TypeError), then copies the values into the inactive buffer
  // (CPU values into a CUDA package: one host-to-device copy), folds its
  // constants and swaps it in. The guard's restore puts the former weights
  // back (a swap when nothing was loaded since, else a copy kept for it).
  void load_weights(const TensorDict& params, const ToModuleOptions& options, ToModuleGuard& guard) override;
  // An update with no copy of its own: `write` gets the inactive buffer's
  // weights as a tensordict (keyed as from_module's) and writes the new
  // values into its tensors, e.g. `tensordict::recv(params, group, src)`
  // receiving a learner's send() straight into the package; the buffer is
  // then swapped in whole, as by to_module (for good: no guard). Calls go on
  // meanwhile with the current weights. A `write` that replaces a tensor
  // instead of writing into it is a ValueError naming the key (and nothing
  // changes); one that throws changes nothing.
  void update_weights(const std::function<void(const TensorDict&)>& write);

  // The loader (torch::inductor::AOTIModelPackageLoader) and the state of
  // weight updates, defined in the library's sources so that this header
  // does not include the loader's; shared with the guards that restore
  // weights.
  struct Loader;

 protected:
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;
  void check_schema(std::string_view python_type) const override;

 private:
  // Reads and checks the input at spec_.inputs[i] from `td`.
  at::Tensor input(const TensorDict& td, std::size_t i) const;

  std::string path_;
  std::unordered_map<std::string, std::string> metadata_;
  AOTISpec spec_;
  // The device type the inputs must be on (check_device refused the others).
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  std::shared_ptr<Loader> loader_;
};

//   AOTIModule policy("policy.pt2");
//   policy(td);                       // writes the out_keys into td
//   policy(step);                     // a generated struct
class AOTIModule : public TensorDictModuleHolder<AOTIModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<AOTIModuleImpl>;
  using Options = AOTIModuleOptions;
  AOTIModule(std::nullptr_t) : Holder(nullptr) {}
  AOTIModule(std::shared_ptr<AOTIModuleImpl> impl) : Holder(std::move(impl)) {}
  explicit AOTIModule(std::string package_path, Options options = {})
      : Holder(std::make_shared<AOTIModuleImpl>(std::move(package_path), std::move(options))) {}
};

}  // namespace tensordict::nn
