// Waiting for asynchronous copies (to(device, /*non_blocking=*/true),
// consolidate({.non_blocking = true})), on any libtorch device type through
// c10's device-generic streams and events.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

namespace tensordict {

// Waits until the work queued so far on `device`'s current stream (the copies
// included) is done. Nothing is queued on the CPU: a no-op there.
void synchronize(at::Device device);

// A point in an accelerator stream's work (a c10::Event recorded there), to
// wait for the copies queued before it without waiting for later work.
class DeviceEvent {
 public:
  // Recorded on `device`'s current stream; ValueError for the CPU,
  // which has no streams to record on.
  explicit DeviceEvent(at::Device device);

  // Blocks the calling thread until the work before the event is done.
  void synchronize() const;
  // Whether it is done, without waiting.
  bool query() const;
  // Makes `stream` wait for it (the host does not wait).
  void block(const c10::Stream& stream) const;
  const c10::Event& event() const { return event_; }

 private:
  c10::Event event_;
};

// DeviceEvent(device): an event after the work queued so far on `device`.
inline DeviceEvent record_event(at::Device device) { return DeviceEvent(device); }

}  // namespace tensordict
