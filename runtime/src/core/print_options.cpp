#include "tensordict/print_options.h"

#include <mutex>

namespace tensordict {

namespace {

// Process-wide, as tensordict's _REPR_OPTIONS; the mutex makes each read a
// consistent copy.
struct State {
  std::mutex mutex;
  PrintOptions options;
};

State& state() {
  static State s;
  return s;
}

// tensordict's set_printoptions.__init__ then set(): what `options` gives,
// over `current`.
PrintOptions resolve(PrintOptions current, const SetPrintOptions& options) {
  const bool detailed_only = options.show_is_shared || options.show_shape || options.show_field_device ||
                             options.show_field_is_shared || options.show_grad || options.show_is_contiguous ||
                             options.show_is_view || options.show_storage_size || options.plain;
  if (!options.verbose) {
    current.show_device = current.show_is_shared = current.show_field_device = current.show_dtype =
        current.show_field_is_shared = false;
  }
  auto take = [](bool& to, const std::optional<bool>& from) {
    if (from) to = *from;
  };
  take(current.show_batch_size, options.show_batch_size);
  take(current.show_device, options.show_device);
  take(current.show_is_shared, options.show_is_shared);
  take(current.show_shape, options.show_shape);
  take(current.show_field_device, options.show_field_device);
  take(current.show_dtype, options.show_dtype);
  take(current.show_field_is_shared, options.show_field_is_shared);
  take(current.show_grad, options.show_grad);
  take(current.show_is_contiguous, options.show_is_contiguous);
  take(current.show_is_view, options.show_is_view);
  take(current.show_storage_size, options.show_storage_size);
  take(current.plain, options.plain);
  if (options.sort_keys) current.sort_keys = *options.sort_keys;
  if (options.compact) {
    current.compact = *options.compact;
  } else if (detailed_only) {
    current.compact = false;
  }
  return current;
}

}  // namespace

PrintOptions get_printoptions() {
  std::lock_guard lock(state().mutex);
  return state().options;
}

PrintOptionsGuard::PrintOptionsGuard(const SetPrintOptions& options) {
  std::lock_guard lock(state().mutex);
  previous_ = state().options;
  state().options = resolve(previous_, options);
}

PrintOptionsGuard::~PrintOptionsGuard() {
  std::lock_guard lock(state().mutex);
  state().options = std::move(previous_);
}

void PrintOptionsGuard::set(const SetPrintOptions& options) {
  std::lock_guard lock(state().mutex);
  state().options = resolve(state().options, options);
}

}  // namespace tensordict
