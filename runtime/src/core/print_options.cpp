#include "tensordict/print_options.h"

#include <mutex>
#include <utility>

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

using Flag = std::pair<bool PrintOptions::*, std::optional<bool> SetPrintOptions::*>;

// The options only the detailed form reads (tensordict's _DETAILED_ONLY_OPTIONS).
constexpr Flag kDetailedOnly[] = {
    {&PrintOptions::show_is_shared, &SetPrintOptions::show_is_shared},
    {&PrintOptions::show_shape, &SetPrintOptions::show_shape},
    {&PrintOptions::show_field_device, &SetPrintOptions::show_field_device},
    {&PrintOptions::show_field_is_shared, &SetPrintOptions::show_field_is_shared},
    {&PrintOptions::show_grad, &SetPrintOptions::show_grad},
    {&PrintOptions::show_is_contiguous, &SetPrintOptions::show_is_contiguous},
    {&PrintOptions::show_is_view, &SetPrintOptions::show_is_view},
    {&PrintOptions::show_storage_size, &SetPrintOptions::show_storage_size},
    {&PrintOptions::plain, &SetPrintOptions::plain},
};
// The others that are flags.
constexpr Flag kBothForms[] = {
    {&PrintOptions::show_batch_size, &SetPrintOptions::show_batch_size},
    {&PrintOptions::show_device, &SetPrintOptions::show_device},
    {&PrintOptions::show_dtype, &SetPrintOptions::show_dtype},
};
// What verbose=false hides unless given (tensordict's _VERBOSE_FALSE_OVERRIDES).
constexpr bool PrintOptions::*kVerbose[] = {&PrintOptions::show_device, &PrintOptions::show_is_shared,
                                            &PrintOptions::show_field_device, &PrintOptions::show_dtype,
                                            &PrintOptions::show_field_is_shared};

// tensordict's set_printoptions.__init__ then set(): what `options` gives,
// over `current`.
PrintOptions resolve(PrintOptions current, const SetPrintOptions& options) {
  bool detailed_only = false;
  for (const auto& flag : kDetailedOnly) detailed_only = detailed_only || (options.*flag.second).has_value();
  if (!options.verbose) {
    for (auto flag : kVerbose) current.*flag = false;
  }
  auto take = [&](const Flag& flag) {
    if (const auto& given = options.*flag.second) current.*flag.first = *given;
  };
  for (const auto& flag : kDetailedOnly) take(flag);
  for (const auto& flag : kBothForms) take(flag);
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
