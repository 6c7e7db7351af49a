// Non-template helpers behind tensordict::TensorClass<Derived> (compiled once in
// the runtime so that generated types stay cheap to compile).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/print_options.h"
#include "tensordict/schema.h"

namespace tensordict {
struct TensorMeta;  // detail/impl.h
}  // namespace tensordict

namespace tensordict::detail {

// Which non-tensor fields a tensorclass's tensordict form holds (as
// non-tensor data): all (to_tensordict), none, the NonTensorStack fields only
// (the dynamic core's ops move those; the others are carried through the
// shell), or what h5 stores (strings and stacks; a field at its default is
// left out, any other value refused).
enum class NonTensorFields { All, None, Stacks, H5 };

// Symbolic dims seen so far while validating one instance: symbol -> (size, field).
struct SymbolBinding {
  std::string_view symbol;
  int64_t size;
  std::string field;
};
using SymbolTable = std::vector<SymbolBinding>;

// A field's path in messages, "Observation.pixels" (the class, then the
// fields), as a chain of names on the validating stack: validation builds no
// string unless it throws.
struct FieldPath {
  const FieldPath* parent;
  std::string_view name;
  std::string str() const;
};

// Validates one tensor field against its FieldInfo and the batch size. Throws
// ValueError (missing field, dtype) or RuntimeError (shape),
// naming the field path and dim.
void validate_tensor_field(const FieldPath& path, const schema::FieldInfo& field, const at::Tensor& tensor,
                           at::IntArrayRef batch_size, SymbolTable& symbols);

// What stack and cat make of an UnbatchedTensor field: the first one,
// with tensordict's warning when the others hold other data.
const at::Tensor& first_unbatched(const std::vector<at::Tensor>& tensors);

// Checks the number of batch dims against a class's declared `batch:` names.
void validate_batch_dims(const schema::ClassInfo& info, const FieldPath& path, at::IntArrayRef batch_size);

// A nested tensorclass's batch size must start with its parent's.
void validate_nested_batch(const FieldPath& path, at::IntArrayRef nested, at::IntArrayRef parent);
// A NonTensorStack field holds one value per element of its level's batch:
// ValueError naming the field when its values span another shape.
void validate_stack_field(const FieldPath& path, at::IntArrayRef element_shape, at::IntArrayRef batch_size);

// "Cannot modify locked TensorDict. ..." (tensordict's message), as RuntimeError.
[[noreturn]] void throw_locked(std::string_view class_name, std::string_view key);
// KeyError: `class_name` has no field `key`.
[[noreturn]] void throw_no_field(std::string_view class_name, std::string_view key);
// TypeError: the field at `key` is not a tensor.
[[noreturn]] void throw_not_tensor(std::string_view class_name, std::string_view key, std::string_view what);
// RuntimeError: a non-tensor field differs between the inputs of stack/cat.
[[noreturn]] void throw_non_tensor_mismatch(std::string_view op, std::string_view path, const std::string& first,
                                            const std::string& other, std::size_t index);
// ValueError: index_put_ writes `written` into the non-tensor field at
// `path`, which holds `held` for the whole batch and cannot hold one value
// per element.
[[noreturn]] void throw_per_element_data(std::string_view path, const std::string& held, const std::string& written);
// RuntimeError: stack/cat of objects whose tensor field at `path` differs
// in its feature shape (`first`, `other`: the shapes past the batch dims).
[[noreturn]] void throw_feature_shape_mismatch(std::string_view op, std::string_view path, at::IntArrayRef first,
                                               at::IntArrayRef other, std::size_t index);
// RuntimeError: an optional tensor field is set in some inputs only.
[[noreturn]] void throw_optional_mismatch(std::string_view op, std::string_view path, std::size_t index);
// ValueError: `op` would give the tensor field at `path` the dtype
// `got` where the schema declares another (the typed layer keeps declared
// dtypes; the tensordict form may leave them).
void check_declared_dtype(std::string_view op, const FieldPath& path, const schema::FieldInfo& field, at::ScalarType got);
// ValueError: to_h5 cannot store the non-tensor field `field`
// (not a string) of `class_name`, which holds `value`, not its default.
[[noreturn]] void throw_h5_non_tensor(std::string_view class_name, const schema::FieldInfo& field, const std::string& value);
// RuntimeError for an empty input list.
[[noreturn]] void throw_empty_list(std::string_view op, std::string_view class_name);

// repr pieces, as tensordict prints them.
// The detailed leaf repr from a tensor's metadata (a lazy stack's shape may
// hold -1): shape, device, dtype and is_shared, as the options select them.
std::string meta_repr(const TensorMeta& m, const PrintOptions& options, std::string_view type_name = "Tensor");
std::string torch_size(at::IntArrayRef sizes);
std::string indent(const std::string& text, int width);
std::string shape_string(at::IntArrayRef sizes);
// A leaf's shape as tensordict reports it: the ragged dims of a nested
// (jagged) tensor read -1.
std::vector<int64_t> leaf_shape(const at::Tensor& t);
// Whether a leaf's shape begins with `prefix`, a ragged dim matching -1 only.
bool leaf_starts_with(const at::Tensor& t, at::IntArrayRef prefix);
std::string python_bool(bool b);
// Python's repr of a non-tensor value.
std::string python_repr(const std::string& v);
std::string python_repr(std::int64_t v);
std::string python_repr(double v);
std::string python_repr(bool v);
template <class T>
std::string python_repr(const std::vector<T>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += python_repr(v[i]);
  }
  return out + "]";
}
// Overloads for the other integer / floating spellings header frontends allow.
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, std::int64_t>)
std::string python_repr(T v) {
  return python_repr(static_cast<std::int64_t>(v));
}
inline std::string python_repr(float v) { return python_repr(static_cast<double>(v)); }

// The compact repr (set_printoptions' compact, the default) as tensordict
// builds it: an entry is a token ("f32[3]", "str", "None") or a container, a
// prefix ("Agent", "[4]") and its entries.
struct CompactNode {
  std::string key;
  std::string text;
  bool container = false;
  std::vector<CompactNode> entries;
};
// A tensor entry: its dtype and its dims past the batch dims, with the
// devices when they are not all cpu and the level has no device:
// "f32[3,-1]", "i64[]@cuda:0".
std::string compact_token(at::IntArrayRef feature_shape, at::ScalarType dtype, std::vector<std::string> devices,
                          bool level_has_device, const PrintOptions& options);
// "[3,4]": dims as the compact repr prints them.
std::string compact_dims(at::IntArrayRef dims);
inline std::string compact_batch_size(at::IntArrayRef batch_size) { return "batch_size=" + compact_dims(batch_size); }
// Orders entries as options.sort_keys says, by their text "key: value".
void sort_compact(std::vector<CompactNode>& entries, const PrintOptions& options);
// "Name(batch_size=[3], device=cpu, fields={...})", the fields on one line
// if it fits in 80 columns, else one per line; a lazy stack's exclusive
// fields follow. `header` holds the "batch_size=[3]" items.
std::string compact_repr(std::string_view class_name, const std::vector<std::string>& header,
                         std::vector<CompactNode> fields, std::vector<CompactNode> exclusive = {});
// The Python type name of a non-tensor value, as the compact repr prints it.
inline std::string python_type_name(const std::string&) { return "str"; }
inline std::string python_type_name(bool) { return "bool"; }
template <class T>
  requires std::is_arithmetic_v<T>
std::string python_type_name(T) {
  return std::is_floating_point_v<T> ? "float" : "int";
}
// a list<T> field is a tuple in the generated Python class
template <class T>
std::string python_type_name(const std::vector<T>&) {
  return "tuple";
}
// The leaf repr of the detailed form, as the options select its attributes:
// "Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False)".
std::string tensor_repr(const at::Tensor& t, const PrintOptions& options, std::string_view type_name = "Tensor");
// The metadata of the detailed form, as the options select it.
std::vector<std::string> header_parts(at::IntArrayRef batch_size, const std::optional<at::Device>& device,
                                      bool is_shared, const PrintOptions& options);

// tensordict's NonTensorData repr: "NonTensorData(data=walk, batch_size=torch.Size([2]), device=None)",
// `data` being Python's str() of the value.
std::string non_tensor_data_repr(std::string data, at::IntArrayRef batch_size, const std::optional<at::Device>& device);
// The same for non-tensor data that may be a stack: a NonTensorStack prints
// its tolist() on its own line.
std::string non_tensor_repr(const NonTensorData& data, at::IntArrayRef batch_size, const std::optional<at::Device>& device);
// Python's str() of a typed non-tensor field's value: a string as is, a
// list<T> as the tuple the generated Python class holds.
inline std::string python_str(const std::string& v) { return v; }
std::string python_tuple_str(const std::vector<std::string>& item_reprs);
template <class T>
std::string python_str(const std::vector<T>& v) {
  std::vector<std::string> items;
  for (const auto& x : v) items.push_back(python_repr(x));
  return python_tuple_str(items);
}
template <class T>
  requires std::is_arithmetic_v<T>
std::string python_str(T v) {
  return python_repr(v);
}

// Assembles "Name(\n    a=...,\n    batch_size=..., device=..., is_shared=...)".
// `tensor_fields` are "key=repr" (sorted here), `non_tensor_fields` keep their order.
std::string tensorclass_repr(std::string_view class_name, std::vector<std::string> tensor_fields,
                             const std::vector<std::string>& non_tensor_fields, at::IntArrayRef batch_size,
                             const std::optional<at::Device>& device, bool is_shared, const PrintOptions& options);

// A mask / condition / operand over the leading batch dims, reshaped so that
// it broadcasts against `leaf` (trailing singleton dims); RuntimeError when it
// has more dims than the leaf. The core's and the typed layer's masked ops
// (src/ops/math_ops.cpp).
at::Tensor align_to_leaf(const at::Tensor& mask, const at::Tensor& leaf);

// Whether `t` is a view of the consolidated `storage`: is_consolidated() of a
// tensordict and of a tensorclass asks it of every leaf.
bool is_view_of(const at::Tensor& t, const at::Tensor& storage);

// `batch` followed by the dims of `t` past its first `skip`.
std::vector<int64_t> with_features(at::IntArrayRef batch, const at::Tensor& t, int64_t skip);

}  // namespace tensordict::detail
