// AOTIModuleImpl's private state: torch's package loader, and what weight
// updates need beside it (aoti_weights.cpp).
#pragma once

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "tensordict/nn/aoti.h"

namespace tensordict::nn {

struct AOTIModuleImpl::Loader {
  Loader(const std::string& path, const AOTIModuleOptions& options)
      : loader(path, options.model_name, /*run_single_threaded=*/false, /*num_runners=*/1, options.device_index) {}
  torch::inductor::AOTIModelPackageLoader loader;

  // ---- weight updates (aoti_weights.cpp) ----
  // What a guard needs to put the weights it replaced back.
  struct Undo {
    // A copy of them, made when a later update was about to overwrite the
    // inactive buffer that held them.
    std::optional<TensorDict> saved;
  };
  // One update (or restore) at a time; calls of the model run beside them.
  std::mutex update_mutex;
  // The package's name for each weight's constant, by fqn (filled on the
  // first update).
  std::unordered_map<std::string, std::string> constant_names;
  // The guard whose former weights the inactive buffer holds (right after
  // its update's swap): restoring it is a swap back.
  std::weak_ptr<Undo> inactive_holds;
  // Whether the inactive buffer holds a whole set of constants (it is
  // allocated by the first update).
  bool inactive_whole = false;
};

}  // namespace tensordict::nn
