// What the repr of a tensordict or a tensorclass shows: tensordict's
// set_printoptions / get_printoptions.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace tensordict {

// How a repr orders its entries (tensordict's sort_keys). The entries are
// compared as they print, "key: value" (the detailed form: the whole entry).
class SortKeys {
 public:
  // Orders two printed entries; the sort is stable.
  using Less = std::function<bool(const std::string&, const std::string&)>;

  // tensordict's "alphabetical", the default.
  static SortKeys alphabetical() { return SortKeys(Less{}, true); }
  // Insertion order (tensordict: any value that is neither "alphabetical"
  // nor callable, such as None).
  static SortKeys insertion() { return SortKeys(Less{}, false); }
  // tensordict's callable sort_keys, as a C++ comparator instead of a key
  // function; an empty `less` means insertion order.
  static SortKeys by(Less less) { return SortKeys(std::move(less), false); }

  bool is_alphabetical() const { return alphabetical_; }
  // The comparator, empty for alphabetical and insertion order.
  const Less& less() const { return less_; }

 private:
  SortKeys(Less less, bool alphabetical) : less_(std::move(less)), alphabetical_(alphabetical) {}
  Less less_;
  bool alphabetical_;
};

// The current options (get_printoptions()), with tensordict's defaults.
// compact (the default) prints each entry as its dtype and its dims past the
// batch dims, "f32[3]"; compact=false prints the detailed form, one
// "Tensor(shape=..., device=..., dtype=..., is_shared=...)" per entry. The
// compact form reads show_batch_size, show_device, show_dtype and sort_keys
// only; the detailed form reads them all.
struct PrintOptions {
  bool show_batch_size = true;
  bool show_device = true;
  bool show_is_shared = true;
  bool show_shape = true;
  bool show_field_device = true;
  bool show_dtype = true;
  bool show_field_is_shared = true;
  bool show_grad = false;
  bool show_is_contiguous = false;
  bool show_is_view = false;
  bool show_storage_size = false;
  // A value summary per entry: mean and std of a floating tensor, min and
  // max of another one.
  bool plain = false;
  SortKeys sort_keys = SortKeys::alphabetical();
  bool compact = true;
};

// The arguments of set_printoptions: what is not given keeps its value.
//   set_printoptions guard({.compact = false, .show_grad = true});
// As in tensordict, verbose=false hides the device, dtype and is_shared
// attributes unless an argument sets them, and an option only the detailed
// form reads (show_is_shared, show_shape, show_field_device,
// show_field_is_shared, show_grad, show_is_contiguous, show_is_view,
// show_storage_size, plain) sets compact=false unless compact is given.
struct SetPrintOptions {
  bool verbose = true;
  std::optional<bool> show_batch_size = std::nullopt;
  std::optional<bool> show_device = std::nullopt;
  std::optional<bool> show_is_shared = std::nullopt;
  std::optional<bool> show_shape = std::nullopt;
  std::optional<bool> show_field_device = std::nullopt;
  std::optional<bool> show_dtype = std::nullopt;
  std::optional<bool> show_field_is_shared = std::nullopt;
  std::optional<bool> show_grad = std::nullopt;
  std::optional<bool> show_is_contiguous = std::nullopt;
  std::optional<bool> show_is_view = std::nullopt;
  std::optional<bool> show_storage_size = std::nullopt;
  std::optional<bool> plain = std::nullopt;
  std::optional<SortKeys> sort_keys = std::nullopt;
  std::optional<bool> compact = std::nullopt;
};

// A copy of the current options.
PrintOptions get_printoptions();

// tensordict's `with set_printoptions(...)`: sets the options for the
// guard's lifetime, then restores those it found. As in tensordict, the
// options are process-wide, not per thread: reading and writing them is
// thread-safe (each repr reads one consistent copy), but guards on several
// threads that overlap restore each other's values in the order they end.
// Set them from one thread.
class PrintOptionsGuard {
 public:
  explicit PrintOptionsGuard(const SetPrintOptions& options);
  ~PrintOptionsGuard();
  PrintOptionsGuard(const PrintOptionsGuard&) = delete;
  PrintOptionsGuard& operator=(const PrintOptionsGuard&) = delete;

  // tensordict's set_printoptions(...).set(): the options for the rest of
  // the program.
  static void set(const SetPrintOptions& options);

 private:
  PrintOptions previous_;
};
using set_printoptions = PrintOptionsGuard;

}  // namespace tensordict
