// gloo_process_group(): the one file that includes ProcessGroupGloo.hpp (and
// so Gloo's headers; Debian's libgloo-dev provides them for both libtorches:
// they are only declarations here, and ProcessGroupGloo holds Gloo objects by
// pointer only, so their version does not change its layout).
//
// What differs between libtorch 1.x and 2.x, in one place:
// - 1.x: ProcessGroupGloo *is* a c10d::ProcessGroup;
//   2.x: it is a c10d::Backend, which a ProcessGroup dispatches to.
// - 2.x's createDeviceForHostname takes a second (defaulted) argument.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <type_traits>
#include <vector>

#include "distributed/calls.h"

#include "tensordict/errors.h"

namespace tensordict {

namespace {

// Templates, so that the branch for the other libtorch is never compiled
// (PG keeps 2.x-only names dependent). `store` is the group's own (2.x keeps
// it beside the backend, which has its own prefix).
template <class Gloo, class PG = c10d::ProcessGroup>
ProcessGroupPtr as_process_group(c10::intrusive_ptr<Gloo> gloo, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                 int world_size, bool all_devices = false) {
  if constexpr (std::is_base_of_v<PG, Gloo>) {
    return gloo;
  } else {
    auto group = c10::make_intrusive<PG>(store, rank, world_size);
    group->setBackend(c10::DeviceType::CPU, PG::BackendType::GLOO, gloo);
    // torch.distributed registers gloo for every device it serves.
    if (all_devices) group->setBackend(c10::DeviceType::CUDA, PG::BackendType::GLOO, gloo);
    group->setDefaultBackend(PG::BackendType::GLOO);
    return group;
  }
}

// Gloo's devices as torch.distributed's ProcessGroupGloo picks them: one per
// interface named in GLOO_SOCKET_IFNAME (comma-separated), else the address
// of this machine's hostname.
std::vector<std::shared_ptr<::gloo::transport::Device>> devices_from_environment() {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  const char* names = std::getenv("GLOO_SOCKET_IFNAME");
  std::string rest = names ? names : "";
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string name = rest.substr(0, comma);
    if (!name.empty()) devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  if (devices.empty()) devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  return devices;
}

}  // namespace

ProcessGroupPtr gloo_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                                   std::chrono::milliseconds timeout, const std::optional<std::string>& hostname) {
  const std::string context = fmt::format("gloo_process_group(rank {} of {})", rank, world_size);
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw ValueError(context + ": the rank must be in [0, world_size)");
  }
  return dist::guarded(context, [&] {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(hostname ? c10d::ProcessGroupGloo::createDeviceForHostname(*hostname)
                                        : c10d::ProcessGroupGloo::createDefaultDevice());
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
    return as_process_group(std::move(gloo), store, rank, world_size);
  });
}

}  // namespace tensordict

namespace tensordict::dist {

ProcessGroupPtr gloo_group_for_torch(const c10::intrusive_ptr<c10d::Store>& group_store,
                                     const c10::intrusive_ptr<c10d::Store>& backend_store, int rank, int world_size,
                                     std::chrono::milliseconds timeout, const std::string& context) {
  return guarded(context, [&] {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices = devices_from_environment();
    // As torch.distributed's ProcessGroupGloo: two threads per device.
    options->threads = static_cast<int>(options->devices.size()) * 2;
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(backend_store, rank, world_size, options);
    return as_process_group(std::move(gloo), group_store, rank, world_size, true);
  });
}

}  // namespace tensordict::dist
