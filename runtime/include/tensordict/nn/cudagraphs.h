// CudaGraphModule: records a tensordict module as a CUDA graph and replays it
// (tensordict.nn.CudaGraphModule).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tensordict/nn/module_base.h"

namespace tensordict::nn {

// Options in the library's one style (op_options.h):
//   CudaGraphModule(policy, {.warmup = 3})
struct CudaGraphModuleOptions {
  // The call that records the graph: the first warmup - 1 calls run the
  // module on a side stream, call `warmup` records, later calls replay.
  int64_t warmup = 2;
  // The CUDA device of the warm-up and capture streams (nullopt: the
  // current one).
  std::optional<at::Device> device = std::nullopt;
};

// A replay runs every recorded kernel with one CPU call. Each call first
// replaces the input's leaves by clones (an input requiring gradients is a
// RuntimeError); the capture needs every leaf on CUDA (ValueError). After the
// capture, the input's batch size and its leaves' shapes must be the
// captured ones (ValueError) and it must hold every in_key the graph reads
// (KeyError): its leaves are copied into the graph's buffers, the graph is
// replayed, and the outputs are written into the input as clones when the
// module wrote into its input (else returned as a clone of the graph's
// output tensordict).
//
// Without a CUDA device (at::hasCUDA() false, or a libtorch built without
// CUDA) every call runs the module directly, as tensordict's does; has_cuda()
// says which. Like tensordict's, it is not a torch::nn::Module: its
// parameters belong to the module it wraps.
class CudaGraphModule {
 public:
  using Function = std::function<TensorDict(const TensorDict&)>;

  // A tensordict module: its in_keys and out_keys.
  explicit CudaGraphModule(ModuleRef module, CudaGraphModuleOptions options = {});
  // A function of a tensordict that reads `in_keys` and writes `out_keys`.
  CudaGraphModule(Function fn, Keys in_keys, Keys out_keys, CudaGraphModuleOptions options = {});
  ~CudaGraphModule();
  CudaGraphModule(const CudaGraphModule&) = delete;
  CudaGraphModule& operator=(const CudaGraphModule&) = delete;

  TensorDict operator()(const TensorDict& td);

  const Keys& in_keys() const { return in_keys_; }
  const Keys& out_keys() const { return out_keys_; }
  int64_t warmup() const { return options_.warmup; }
  // Calls counted towards the capture (always 0 without CUDA).
  int64_t counter() const { return counter_; }
  bool has_cuda() const { return has_cuda_; }
  // tensordict's repr.
  std::string repr() const;

 private:
  TensorDict run_eager(const TensorDict& td);
  TensorDict capture(const TensorDict& td);
  TensorDict replay(const TensorDict& td);

  Function fn_;
  std::string module_repr_;
  Keys in_keys_;
  Keys out_keys_;
  CudaGraphModuleOptions options_;
  bool has_cuda_ = false;
  int64_t counter_ = 0;
  // Whether the module returns its input (decided by the first call).
  std::optional<bool> out_matches_in_;
  // The streams, the graph and its buffers (defined where CUDA is built in).
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

}  // namespace tensordict::nn
