// Waiting for asynchronous copies (to(device, /*non_blocking=*/true),
// consolidate({.non_blocking = true})), on any libtorch device type through
// c10's device-generic streams and events.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>

namespace tensordict {

// Waits until the work queued so far on `device`'s current stream (the copies
// included) is done. Nothing is queued on the CPU: a no-op there.
void synchronize(at::Device device);

// An event recorded on `device`'s current stream after the work queued so
// far: event.synchronize() waits for it, event.query() says whether it is
// done, and other streams can wait on it. std::invalid_argument for the CPU,
// which has no streams to record on.
c10::Event record_event(at::Device device);

}  // namespace tensordict
