// CudaGraphModule: warm-up, capture and replay of a tensordict module
// (tensordict/nn/cudagraphs.py). The CUDA half is compiled only against a
// libtorch built with CUDA (TENSORCLASS_WITH_CUDA); elsewhere every call runs
// the module.
#include "tensordict/nn/cudagraphs.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "nn/text.h"
#include "tensordict/errors.h"

#if TENSORCLASS_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tensordict::nn {
namespace {

constexpr const char* kRequiresGradError =
    "CudaGraphModule cannot be part of a graph (or leaves variables). If you need tensors to require gradients, "
    "please pass them as constant inputs to the module instead (e.g. `def func(a, b, c=c): ...` where c is the "
    "tensor requiring gradients).";

// tensordict's `tensordict.apply(self._clone, out=tensordict)`: every leaf
// replaced by a clone, so that the module cannot write into the caller's
// tensors; a leaf requiring gradients is refused.
void clone_leaves(const TensorDict& td) {
  for (const Value& value : td.values({.include_nested = true, .leaves_only = true})) {
    if (value.is_tensor() && value.tensor().requires_grad()) throw RuntimeError(kRequiresGradError);
  }
  TensorDict(td).update(td.clone());
}

}  // namespace

#if TENSORCLASS_WITH_CUDA
namespace {
// torch.Size([3, 4]), as tensordict's messages print a shape.
std::string size_text(at::IntArrayRef sizes) { return fmt::format("torch.Size([{}])", fmt::join(sizes, ", ")); }
}  // namespace

struct CudaGraphModule::Graph {
  explicit Graph(c10::DeviceIndex device)
      : warmup_stream(c10::cuda::getStreamFromPool(false, device)),
        capture_stream(c10::cuda::getStreamFromPool(false, device)) {}

  // `waiting` runs its next work after what `done` has queued.
  static void wait(const c10::cuda::CUDAStream& waiting, const c10::cuda::CUDAStream& done) {
    at::cuda::CUDAEvent event;
    event.record(done);
    event.block(waiting);
  }

  c10::cuda::CUDAStream warmup_stream;
  c10::cuda::CUDAStream capture_stream;
  at::cuda::CUDAGraph graph;
  // The leaves the graph reads, as it reads them (the replays copy the new
  // inputs into them), with their keys and shapes.
  Keys input_keys;
  std::vector<at::Tensor> input_buffers;
  std::vector<int64_t> batch_size;
  // The captured call's output (locked): the graph rewrites it at each replay.
  TensorDict out;
  // The keys written back into the input when the module writes into it.
  Keys written;
};
#else
struct CudaGraphModule::Graph {};
#endif

CudaGraphModule::CudaGraphModule(ModuleRef module, CudaGraphModuleOptions options)
    : CudaGraphModule([m = module.ptr()](const TensorDict& td) { return m->forward(td); }, module.ptr()->in_keys(),
                      module.ptr()->out_keys(), std::move(options)) {
  module_repr_ = module.ptr()->repr();
}

CudaGraphModule::CudaGraphModule(Function fn, Keys in_keys, Keys out_keys, CudaGraphModuleOptions options)
    : fn_(std::move(fn)),
      module_repr_("<function>"),
      in_keys_(std::move(in_keys)),
      out_keys_(std::move(out_keys)),
      options_(std::move(options)) {
  if (options_.warmup < 1) throw ValueError("warmup must be an integer greater than 0.");
  if (!fn_) throw ValueError("CudaGraphModule: no module");
#if TENSORCLASS_WITH_CUDA
  has_cuda_ = at::hasCUDA();
  if (has_cuda_) {
    if (options_.device && !options_.device->is_cuda()) {
      throw ValueError(fmt::format("CudaGraphModule: device must be a CUDA device, got {}", options_.device->str()));
    }
    graph_ = std::make_unique<Graph>(options_.device && options_.device->has_index() ? options_.device->index()
                                                                                      : c10::cuda::current_device());
  }
#endif
}

CudaGraphModule::~CudaGraphModule() = default;

TensorDict CudaGraphModule::operator()(const TensorDict& td) {
  if (counter_ >= options_.warmup) return replay(td);
  if (!has_cuda_ || counter_ < options_.warmup - 1) return run_eager(td);
  return capture(td);
}

TensorDict CudaGraphModule::run_eager(const TensorDict& td) {
#if TENSORCLASS_WITH_CUDA
  if (has_cuda_) {
    Graph::wait(graph_->warmup_stream, c10::cuda::getCurrentCUDAStream());
    TensorDict out;
    {
      c10::cuda::CUDAStreamGuard on_side(graph_->warmup_stream);
      clone_leaves(td);
      out = fn_(td);
    }
    Graph::wait(c10::cuda::getCurrentCUDAStream(), graph_->warmup_stream);
    if (!out_matches_in_) out_matches_in_ = out.impl() == td.impl();
    ++counter_;
    return out;
  }
#endif
  clone_leaves(td);
  TensorDict out = fn_(td);
  if (!out_matches_in_) out_matches_in_ = out.impl() == td.impl();
  return out;
}

#if TENSORCLASS_WITH_CUDA
TensorDict CudaGraphModule::capture(const TensorDict& td) {
  if (td.device()) {
    if (!td.device()->is_cuda()) throw ValueError("The input tensordict device must be of the 'cuda' type.");
  } else {
    for (const Value& value : td.values({.include_nested = true, .leaves_only = true})) {
      if (value.is_tensor() && !value.tensor().is_cuda()) {
        throw ValueError(fmt::format("All tensors must be stored on CUDA. Got {}.",
                                     c10::DeviceTypeName(value.tensor().device().type(), /*lower_case=*/true)));
      }
    }
  }
  Graph& g = *graph_;
  c10::cuda::device_synchronize();
  Graph::wait(g.warmup_stream, c10::cuda::getCurrentCUDAStream());
  TensorDict inputs;
  TensorDict result;
  {
    c10::cuda::CUDAStreamGuard on_side(g.warmup_stream);
    clone_leaves(td);
    // A clone: the caller keeps `td`; the replays copy into these leaves.
    inputs = td.clone();
    g.input_keys = inputs.keys({.include_nested = true, .leaves_only = true});
    g.input_buffers.clear();
    for (const auto& key : g.input_keys) g.input_buffers.push_back(inputs.get(key));
    g.batch_size = inputs.batch_size().vec();
    result = fn_(td);
    if (!out_matches_in_) out_matches_in_ = result.impl() == td.impl();
  }
  Graph::wait(g.capture_stream, g.warmup_stream);
  {
    c10::cuda::CUDAStreamGuard on_capture(g.capture_stream);
    g.graph.capture_begin();
    g.out = fn_(inputs);
    g.graph.capture_end();
  }
  // The caller's stream reads what the warm-up stream computed (`result`).
  Graph::wait(c10::cuda::getCurrentCUDAStream(), g.warmup_stream);
  g.out.lock_();
  if (*out_matches_in_) {
    // The outputs: out_keys, else the leaves the module replaced.
    g.written = out_keys_;
    if (g.written.empty()) {
      for (const auto& key : g.out.keys({.include_nested = true, .leaves_only = true})) {
        const auto at = std::find(g.input_keys.begin(), g.input_keys.end(), key);
        if (at == g.input_keys.end() || !g.out.get(key).is_same(g.input_buffers[at - g.input_keys.begin()])) {
          g.written.push_back(key);
        }
      }
    }
  }
  ++counter_;
  return result;
}

TensorDict CudaGraphModule::replay(const TensorDict& td) {
  Graph& g = *graph_;
  if (td.batch_size() != at::IntArrayRef(g.batch_size)) {
    throw ValueError(fmt::format("CudaGraphModule was captured with batch_size={} but got batch_size={}. CUDA graphs "
                                 "replay fixed shapes.",
                                 size_text(g.batch_size), size_text(td.batch_size())));
  }
  std::vector<at::Tensor> sources(g.input_keys.size());
  Keys missing;
  for (std::size_t i = 0; i < g.input_keys.size(); ++i) {
    const NestedKey& key = g.input_keys[i];
    sources[i] = td.contains(key) ? td.get(key, at::Tensor()) : at::Tensor();
    if (!sources[i].defined()) {
      if (text::contains_key(in_keys_, key)) missing.push_back(key);
      continue;
    }
    if (sources[i].sizes() != g.input_buffers[i].sizes()) {
      throw ValueError(fmt::format("CudaGraphModule was captured with the entry {} of shape {} but got shape {}. CUDA "
                                   "graphs replay fixed shapes.",
                                   key.repr(), size_text(g.input_buffers[i].sizes()), size_text(sources[i].sizes())));
    }
  }
  if (!missing.empty()) {
    throw KeyError(fmt::format("CudaGraphModule input is missing the in_keys {} that the captured graph reads.",
                               text::keys_repr(missing)));
  }
  // On the current stream: the replay reads the new inputs without a host
  // synchronization.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].defined()) g.input_buffers[i].copy_(sources[i]);
  }
  g.graph.replay();
  if (*out_matches_in_) {
    TensorDict(td).update(g.out, UpdateOptions{.clone = true, .keys_to_update = g.written});
    return td;
  }
  return g.out.clone();
}
#else
TensorDict CudaGraphModule::capture(const TensorDict& td) { return run_eager(td); }
TensorDict CudaGraphModule::replay(const TensorDict& td) { return run_eager(td); }
#endif

std::string CudaGraphModule::repr() const {
  return fmt::format("CudaGraphModule(\n    module={}, \n    warmup={}, \n    in_keys={}, \n    out_keys={}\n)",
                     text::add_indent(module_repr_, 4), options_.warmup, text::keys_repr(in_keys_),
                     text::keys_repr(out_keys_));
}

}  // namespace tensordict::nn
