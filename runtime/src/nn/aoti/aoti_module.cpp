// AOTIModule: an AOTInductor package run on tensordicts, by key.
#include "tensordict/nn/aoti.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <exception>
#include <utility>

#include "nn/aoti/aoti_loader.h"
#include "nn/aoti/aoti_spec.h"
#include "nn/aoti/package_entries.h"
#include "nn/text.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"

namespace tensordict::nn {

namespace {

// "[*, 4]": the shape a package takes, a dynamic batch dim as *.
std::string shape_text(const AOTISpec& spec, const AOTIEntry& entry) {
  std::vector<std::string> dims;
  for (int64_t size : spec.batch_size) dims.push_back(spec.dynamic_batch ? "*" : std::to_string(size));
  for (int64_t size : entry.event_shape) dims.push_back(std::to_string(size));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// The device type a package runs on must exist here: the loader of a CUDA
// package on a machine without CUDA fails deep inside the model's library.
void check_device(const std::string& path, const std::string& device_type) {
  if (device_type == "cuda" && !at::hasCUDA()) {
    throw RuntimeError(fmt::format(
        "AOTIModule: package '{}' was compiled for cuda, and this process has no CUDA device (export it on the CPU "
        "to run it here)",
        path));
  }
  if (!device_type.empty() && device_type != "cpu" && device_type != "cuda") {
    throw RuntimeError(fmt::format("AOTIModule: package '{}' was compiled for {}, which this library does not run",
                                   path, device_type));
  }
}

}  // namespace

AOTIModuleImpl::AOTIModuleImpl(std::string package_path, AOTIModuleOptions options)
    : TensorDictModuleBase({}, {}), path_(std::move(package_path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw RuntimeError(fmt::format("AOTIModule: package '{}' is not a file", path_));
  }
  // Nothing is extracted before the entry names and the metadata are
  // checked: torch's loader writes the entries out by name.
  aoti::check_package_entries(path_);
  // The metadata first: it says which device the model's library needs.
  try {
    metadata_ = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(path_, options.model_name);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view what) {
      return fmt::format("AOTIModule: package '{}' cannot be read as an AOTInductor package (model '{}'): {}", path_,
                         options.model_name, what);
    });
  }
  spec_ = aoti::read_spec(path_, metadata_);
  check_device(path_, spec_.device_type);
  try {
    loader_ = std::make_shared<Loader>(path_, options);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view what) {
      return fmt::format("AOTIModule: package '{}' cannot be loaded: {}", path_, what);
    });
  }
  aoti::apply_call_spec(path_, loader_->loader.get_call_spec(), spec_);
  device_type_ = spec_.device_type == "cuda" ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  for (const AOTIEntry& entry : spec_.inputs) in_keys_.push_back(entry.key);
  for (const AOTIEntry& entry : spec_.outputs) out_keys_.push_back(entry.key);
}

AOTIModuleImpl::~AOTIModuleImpl() = default;

std::vector<at::Tensor> AOTIModuleImpl::run_tensors(const std::vector<at::Tensor>& inputs) {
  return loader_->loader.run(inputs);
}

at::Tensor AOTIModuleImpl::input(const TensorDict& td, std::size_t i) const {
  const AOTIEntry& entry = spec_.inputs[i];
  // One lookup: a missing key (undefined here) gets the module's KeyError.
  at::Tensor t = td.get(entry.key, at::Tensor());
  if (!t.defined()) {
    check_inputs(td, in_keys_);
    throw KeyError(fmt::format("AOTIModule('{}'): input {} holds no tensor", path_, entry.key.repr()));
  }
  if (t.scalar_type() != entry.dtype) {
    throw TypeError(fmt::format("AOTIModule('{}'): input {} has dtype {}, the package takes {}", path_,
                                entry.key.repr(), dtype_name(t.scalar_type()), dtype_name(entry.dtype)));
  }
  const auto batch_dims = static_cast<int64_t>(spec_.batch_size.size());
  const auto sizes = t.sizes();
  bool fits = t.dim() == batch_dims + static_cast<int64_t>(entry.event_shape.size()) &&
              std::equal(entry.event_shape.begin(), entry.event_shape.end(), sizes.begin() + batch_dims);
  if (fits && !spec_.dynamic_batch) fits = std::equal(spec_.batch_size.begin(), spec_.batch_size.end(), sizes.begin());
  if (!fits) {
    throw ValueError(fmt::format("AOTIModule('{}'): input {} has shape [{}], the package takes {} ({} batch dim(s){}, "
                                 "event shape [{}])",
                                 path_, entry.key.repr(), fmt::join(sizes, ", "), shape_text(spec_, entry),
                                 batch_dims, spec_.dynamic_batch ? ", any size" : "",
                                 fmt::join(entry.event_shape, ", ")));
  }
  if (t.device().type() != device_type_) {
    throw RuntimeError(fmt::format("AOTIModule('{}'): input {} is on {}, the package runs on {}", path_,
                                   entry.key.repr(), t.device().str(), spec_.device_type));
  }
  // The compiled kernels index the layout the export saw.
  return t.contiguous();
}

TensorDict AOTIModuleImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(spec_.inputs.size());
  const auto batch_dims = static_cast<int64_t>(spec_.batch_size.size());
  for (std::size_t i = 0; i < spec_.inputs.size(); ++i) {
    inputs.push_back(input(td, i));
    // Every input shares the batch dims (one symbol per dim in the package).
    if (i > 0 && inputs[i].sizes().slice(0, batch_dims) != inputs[0].sizes().slice(0, batch_dims)) {
      throw ValueError(fmt::format("AOTIModule('{}'): inputs {} and {} differ in their batch dims ([{}] and [{}])",
                                   path_, spec_.inputs[0].key.repr(), spec_.inputs[i].key.repr(),
                                   fmt::join(inputs[0].sizes().slice(0, batch_dims), ", "),
                                   fmt::join(inputs[i].sizes().slice(0, batch_dims), ", ")));
    }
  }
  std::vector<at::Tensor> outputs;
  try {
    outputs = run_tensors(inputs);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view what) { return fmt::format("AOTIModule('{}'): {}", path_, what); });
  }
  if (outputs.size() != spec_.outputs.size()) {
    throw RuntimeError(fmt::format("AOTIModule('{}'): the model returned {} tensor(s) for out_keys={}", path_,
                                   outputs.size(), text::keys_repr(out_keys_)));
  }
  // The outputs are what the metadata says (a package is trusted code, but
  // one edited or mislabelled must not write tensors of another shape
  // under a key): the inputs' batch dims, then the event shape.
  const at::IntArrayRef batch = inputs.empty() ? at::IntArrayRef(spec_.batch_size)
                                               : inputs[0].sizes().slice(0, batch_dims);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const AOTIEntry& entry = spec_.outputs[i];
    const auto sizes = outputs[i].sizes();
    const bool fits = outputs[i].scalar_type() == entry.dtype &&
                      sizes.size() == batch.size() + entry.event_shape.size() &&
                      sizes.slice(0, batch.size()) == batch &&
                      sizes.slice(batch.size()) == at::IntArrayRef(entry.event_shape);
    if (!fits) {
      throw RuntimeError(fmt::format("AOTIModule('{}'): output {} is {}[{}]; the package's metadata says {}{} at "
                                     "batch [{}]",
                                     path_, entry.key.repr(), dtype_name(outputs[i].scalar_type()),
                                     fmt::join(sizes, ", "), dtype_name(entry.dtype), shape_text(spec_, entry),
                                     fmt::join(batch, ", ")));
    }
  }
  // An out_key that is also an in_key replaces the input, as tensordict's
  // TensorDictModule does (a normalising module writes back its input).
  TensorDict dest = out ? *out : td;
  for (std::size_t i = 0; i < outputs.size(); ++i) dest.set(spec_.outputs[i].key, std::move(outputs[i]));
  return dest;
}

void AOTIModuleImpl::check_schema(std::string_view python_type) const {
  if (spec_.schema && *spec_.schema != python_type) {
    throw TypeError(fmt::format("AOTIModule('{}'): the package was exported for {}, not for {}", path_,
                                *spec_.schema, python_type));
  }
}

std::string AOTIModuleImpl::repr() const {
  return text::fields_repr(type_name(), {"package=" + path_, "device=" + spec_.device_type,
                                         "in_keys=" + text::keys_repr(in_keys_),
                                         "out_keys=" + text::keys_repr(out_keys())});
}

}  // namespace tensordict::nn
