// tensordict::Work and the translation of c10d's errors.
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "distributed/calls.h"

namespace tensordict {

namespace dist {

void rethrow_c10d(const std::string& context) {
  try {
    throw;
  } catch (const c10::Error& e) {
    throw RuntimeError(fmt::format("{}: {}", context, e.what_without_backtrace()));
  } catch (const std::invalid_argument&) {
    throw;  // this library's own argument errors already name their context
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("{}: {}", context, e.what()));
  }
}

}  // namespace dist

void Work::wait() {
  if (!state_) return;
  if (!state_->error.empty()) throw RuntimeError(state_->error);
  if (state_->done) return;
  try {
    if (auto stage = std::exchange(state_->stage, nullptr)) stage();
    for (auto& p : state_->posted) {
      dist::guarded(p.context, [&] { p.work->wait(); });
    }
    if (state_->finish) state_->finish();
  } catch (const std::exception& e) {
    state_->error = e.what();
    state_->done = true;
    state_->buffers.clear();
    throw;
  }
  state_->done = true;
  state_->buffers.clear();
}

bool Work::is_completed() const {
  if (!state_ || state_->done) return true;
  if (state_->stage) return false;  // an irecv whose second stage is not posted yet
  for (const auto& p : state_->posted) {
    if (!p.work->isCompleted()) return false;
  }
  return true;
}

}  // namespace tensordict
