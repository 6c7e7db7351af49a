// synchronize() and DeviceEvent: waiting for asynchronous copies through c10's
// device-generic streams and events (no CUDA API named here).
#include "tensordict/device_sync.h"
#include "tensordict/errors.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <stdexcept>
#include <thread>

namespace tensordict {

namespace {

c10::Event recorded(at::Device device) {
  if (device.is_cpu()) {
    throw ValueError(
        "record_event: the CPU has no stream to record on; copies between host and accelerator run on the "
        "accelerator's "
        "stream, so record the event there (e.g. record_event(at::Device(at::kCUDA, 0)))");
  }
  c10::impl::VirtualGuardImpl guard(device.type());
  c10::Event event(device.type());
  event.record(guard.getStream(device));
  return event;
}

// c10::Event::synchronize exists from libtorch 2.0 on; before, poll query().
template <class Event>
void wait_for(const Event& event) {
  if constexpr (requires { event.synchronize(); }) {
    event.synchronize();
  } else {
    while (!event.query()) std::this_thread::yield();
  }
}

}  // namespace

void synchronize(at::Device device) {
  if (device.is_cpu()) return;
  c10::impl::VirtualGuardImpl guard(device.type());
  guard.getStream(device).synchronize();
}

DeviceEvent::DeviceEvent(at::Device device) : event_(recorded(device)) {}

void DeviceEvent::synchronize() const { wait_for(event_); }

bool DeviceEvent::query() const { return event_.query(); }

void DeviceEvent::block(const c10::Stream& stream) const { event_.block(stream); }

}  // namespace tensordict
