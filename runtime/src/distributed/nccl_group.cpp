// The NCCL group of init_process_group("nccl"): the one file that includes
// c10d's NCCL headers (and so nccl.h and CUDA's), compiled only where
// libtorch has c10d NCCL (runtime/CMakeLists.txt, TENSORCLASS_BUILD_NCCL).
//
// As torch.distributed's _new_process_group_helper makes it: a
// c10d::ProcessGroup on the group's store whose one backend, for CUDA, is
// NCCL on the store with the "cuda/" prefix (NCCL serves CUDA only). Which
// NCCL backend, as torch's "nccl" registration picks it:
// - by default torch's nccl2 engine (c10d::nccl2::ProcessGroupNCCL), bound
//   to a device at once (_nccl2_device: LOCAL_RANK % device count when
//   LOCAL_RANK is set, else rank % device count), which creates the
//   communicator during init_process_group, on every rank together;
// - with TORCH_DIST_USE_NCCL2=0 (or a libtorch without nccl2), the classic
//   c10d::ProcessGroupNCCL with is_high_priority_stream false, unbound: its
//   communicator is made at the first call, on the device of its tensors.
// Both take the group's timeout, group name "0" and no global ranks (the
// default group), as Python sets them.
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#if __has_include(<torch/csrc/distributed/c10d/nccl2/ProcessGroupNCCL.hpp>)
#include <torch/csrc/distributed/c10d/nccl2/ProcessGroupNCCL.hpp>
#define TENSORCLASS_NCCL2 1
#endif

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "distributed/calls.h"
#include "tensordict/errors.h"

namespace tensordict::dist {

namespace {

// The default group's name and description, as _new_process_group_helper sets them.
const std::string kGroupName = "0", kGroupDesc = "default_pg";

// Python's int(os.environ["LOCAL_RANK"]): a value that is not an integer fails.
std::optional<int64_t> local_rank(const std::string& context) {
  const char* text = std::getenv("LOCAL_RANK");
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 0) {
    throw ValueError(fmt::format("{}: LOCAL_RANK must be a non-negative integer, got '{}'", context, text));
  }
  return value;
}

// _nccl2_device: the CUDA device this rank's communicator lives on.
at::Device bound_device(int rank, const std::string& context) {
  const int64_t count = c10::cuda::device_count();
  if (count == 0) throw RuntimeError(fmt::format("{}: nccl requires at least one CUDA device", context));
  const int64_t index = local_rank(context).value_or(rank) % count;
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

bool use_nccl2() {
#ifdef TENSORCLASS_NCCL2
  const char* env = std::getenv("TORCH_DIST_USE_NCCL2");
  return env == nullptr || std::string(env) != "0";
#else
  return false;
#endif
}

}  // namespace

std::chrono::milliseconds nccl_default_timeout() { return c10d::kProcessGroupNCCLDefaultTimeout; }

ProcessGroupPtr nccl_group_for_torch(const c10::intrusive_ptr<c10d::Store>& group_store,
                                     const c10::intrusive_ptr<c10d::Store>& backend_store, int rank, int world_size,
                                     std::chrono::milliseconds timeout, const std::string& context) {
  const bool nccl2 = use_nccl2();
  const std::optional<at::Device> device = nccl2 ? std::optional<at::Device>(bound_device(rank, context)) : std::nullopt;
  return guarded(context, [&] {
    auto options = c10d::ProcessGroupNCCL::Options::create(/*is_high_priority_stream=*/false);
    options->timeout = timeout;
    options->group_name = kGroupName;
    auto group = c10::make_intrusive<c10d::ProcessGroup>(group_store, rank, world_size);
    c10::intrusive_ptr<c10d::Backend> backend;
#ifdef TENSORCLASS_NCCL2
    if (nccl2) backend = c10::make_intrusive<c10d::nccl2::ProcessGroupNCCL>(backend_store, rank, world_size, options);
#endif
    if (!backend) backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(backend_store, rank, world_size, options);
    group->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
    // setBackend binds the backend to the group's device (nccl2 connects there).
    if (device) group->setBoundDeviceId(device);
    group->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, backend);
    group->setGroupName(kGroupName);
    group->setGroupDesc(kGroupDesc);
    return ProcessGroupPtr(group);
  });
}

}  // namespace tensordict::dist
