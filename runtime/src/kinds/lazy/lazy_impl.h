// The storage of a LazyStackedTensorDict (private).
#pragma once

#include <vector>

#include "kinds/kind_cast.h"
#include "core/kind_ops.h"
#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

class LazyStackedImpl final : public TensorDictImpl, public Stacked {
 public:
  // `stack_dim_name`: the stack dim's name (the other dims' names are the
  // members', when they all agree). Without members, `member_batch` and
  // `device` describe the members to come (tensordict's empty
  // LazyStackedTensorDict); with members, `member_batch` must be theirs.
  LazyStackedImpl(std::vector<TensorDict> members, int64_t stack_dim,
                  std::optional<std::string> stack_dim_name = std::nullopt,
                  std::optional<std::vector<int64_t>> member_batch = std::nullopt,
                  std::optional<at::Device> device = std::nullopt);
  ~LazyStackedImpl() override { destroy_nested(); }

  static constexpr Kind kKind = Kind::LazyStack;
  Kind kind() const override { return kKind; }
  at::IntArrayRef batch_size() const override { return batch_size_; }
  std::optional<at::Device> device() const override;
  const Names& names() const override { return names_; }
  void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) override;

  std::size_t num_keys() const override;
  void for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const override;
  void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const override;
  std::optional<Value> find(const std::string& key) const override;
  TensorMeta tensor_meta(const std::string& key) const override;
  void for_each_child(c10::function_ref<void(const TensorDict&)> fn) const override;
  void insert(const std::string& key, Value value) override;
  bool erase(const std::string& key) override;
  void rename(const std::string& from, const std::string& to) override;
  void assign(const std::string& key, const at::Tensor& value) override;
  bool entries_alias_storage() const override { return false; }
  // Locked through lock_(), or when every member is (tensordict's rule).
  bool derived_lock() const override;
  // Marked shared when it has members and every member is; is_shared()
  // asks the members and refuses a stack of shared and unshared ones
  // (tensordict's rules).
  bool marked_shared() const override;
  bool is_shared() const override;
  std::optional<EntryKind> entry_kind(const std::string& key) const override;
  // From the members' keys: nothing is stacked (members may differ in shape).
  bool has_key(const std::string& key) const override { return entry_kind(key).has_value(); }
  // Along the stack dim: the selected members (an int: the member itself);
  // across other dims: each member indexed, still stacked lazily.
  TensorDict index(at::ArrayRef<TensorIndex> index) const override;
  // Writes into the members the index selects, each its part of `value`.
  void assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                 const at::Tensor& value) override;
  // What an index does to the members: those it selects along the stack dim
  // (`single`: an int, which removes the dim), the index of the other dims
  // (full slices: `others_trivial`) and where the stack dim lands.
  struct Selection {
    std::vector<int64_t> chosen;
    bool single = false;
    std::vector<TensorIndex> others;
    bool others_trivial = true;
    int64_t result_stack_dim = 0;
  };
  // nullopt when the index has items a per-dim split cannot express.
  std::optional<Selection> select_members(at::ArrayRef<TensorIndex> index) const;
  // select_members for a write: also nullopt when an Ellipsis is followed by
  // items (other dims to a level with more batch dims than the caller's).
  std::optional<Selection> select_written(at::ArrayRef<TensorIndex> index) const;
  // tensordict's _setitem_index with a tensordict: each selected member
  // takes its part of `value` (of the indexed batch size), updated in place
  // for an int along the stack dim alone, else written at the member's
  // index, so a key the value brings goes into those members only. False
  // when the index cannot be split per member.
  bool put_members(at::ArrayRef<TensorIndex> index, const TensorDict& value) const override;
  // Along the stack dim: the members themselves; across it, lazy stacks of
  // the members' slices.
  std::vector<TensorDict> unbind(int64_t dim) const override;
  // clone, to, apply, detach: member by member, the result a lazy stack.
  std::shared_ptr<TensorDictImpl> map_parts(c10::function_ref<TensorDict(const TensorDict&)> fn) const override;
  // fn(member i, i) for every member, stacked lazily along this stack's dim
  // (with its name): the ops tensordict runs member by member (_lazy.py
  // _fast_apply), whose members may differ in shape.
  std::shared_ptr<LazyStackedImpl> map_members(c10::function_ref<TensorDict(const TensorDict&, std::size_t)> fn) const;
  // permute, squeeze, unsqueeze: member by member; expand: the members
  // expanded, stacked densely where they allow (tensordict's rules).
  std::optional<TensorDict> reshape_parts(const BatchShapeOp& op) const override;
  // Along the stack dim: groups of members; along another: split members.
  std::optional<std::vector<TensorDict>> split_parts(at::IntArrayRef sizes, int64_t dim) const override;
  // reshape, view, flatten, unflatten to `shape` (checked): the members
  // regrouped where the op flattens or unflattens dims, else nullopt.
  std::optional<TensorDict> regroup(at::IntArrayRef shape) const;
  // A lazy stack of `members` along `stack_dim` that keeps this one's stack
  // dim name and device.
  std::shared_ptr<LazyStackedImpl> restack(std::vector<TensorDict> members, int64_t stack_dim) const;

  const std::vector<TensorDict>& members() const override { return members_; }
  int64_t stack_dim() const override { return stack_dim_; }
  std::shared_ptr<TensorDictImpl> restacked(std::vector<TensorDict> members, int64_t stack_dim) const override {
    return restack(std::move(members), stack_dim);
  }
  std::shared_ptr<TensorDictImpl> named_like(std::vector<TensorDict> members, int64_t stack_dim) const override {
    return std::make_shared<LazyStackedImpl>(std::move(members), stack_dim, stack_dim_name_);
  }
  const std::optional<std::string>& stack_dim_name() const { return stack_dim_name_; }
  // The members' batch size, -1 at the dims where they differ.
  const std::vector<int64_t>& member_batch() const { return member_batch_; }
  // Whether the members share their batch size (no -1 in it).
  bool member_batch_known() const;
  void add_member(int64_t position, const TensorDict& td);
  // Replaces the members (update with update_batch_size); they must share a
  // batch size, which becomes the stack's.
  void reset_members(std::vector<TensorDict> members) override;
  // Keys every member has, in the first member's order.
  std::vector<std::string> common_keys() const;
  // Whether the entries every member has stack: their tensors agree in shape
  // at every depth (tensordict's _entry_shapes finds no None).
  bool entries_stack() const override;

 protected:
  void release_children(c10::function_ref<void(std::shared_ptr<TensorDictImpl>)> take) override;

 private:
  // Batch size and names from the members (names when they all agree, as
  // tensordict reads them), the stack dim inserted.
  void refresh_meta();

  std::vector<TensorDict> members_;
  int64_t stack_dim_;
  std::optional<std::string> stack_dim_name_;
  std::vector<int64_t> member_batch_;
  std::optional<at::Device> empty_device_;  // the device while there are no members
  std::vector<int64_t> batch_size_;
  Names names_;
};

// cat() of `tds` when one of them is a lazy stack: a lazy stack of every
// member (along the stack dim) or of the members concatenated pairwise.
TensorDict lazy_cat(const std::vector<TensorDict>& tds, int64_t dim);
// stack() of lazy stacks of as many members along the same stack dim: a lazy
// stack of the members stacked pairwise (tensordict's rule, so members of
// different shapes work); nullopt for other inputs.
std::optional<TensorDict> lazy_stack_of_stacks(const std::vector<TensorDict>& tds, int64_t dim);

// The lazy stack `impl` is, or null for another kind.
inline const LazyStackedImpl* as_lazy(const TensorDictImpl& impl) { return kind_cast<LazyStackedImpl>(&impl); }
// The lazy stack `td` is (the KindOps entries below are called for lazy
// stacks only).
inline const LazyStackedImpl& lazy_of(const TensorDict& td) { return static_cast<const LazyStackedImpl&>(*td.impl()); }
// The same, to change its members: a handle shares its storage, const or not.
inline LazyStackedImpl& mutable_lazy_of(const TensorDict& td) { return static_cast<LazyStackedImpl&>(*td.impl()); }

// The op families tensordict defines on a lazy stack's members, one file
// each (KindOps, core/kind_ops.h, says what each does).
// lazy_densify.cpp
TensorDict lazy_densify(const TensorDict& td);
std::optional<TensorDict> lazy_maybe_dense_stack(const std::vector<TensorDict>& tds, int64_t dim);
TensorDict lazy_dense_stack_tds(const TensorDict& td);
// lazy_math.cpp
TensorDict lazy_pointwise(const TensorDict& td, const Operand* operand, const char* op,
                          c10::function_ref<TensorDict(const TensorDict&, const Operand*)> fn);
void lazy_pointwise_(const TensorDict& td, const Operand* operand, const char* op,
                     c10::function_ref<void(TensorDict&, const Operand*)> fn);
std::optional<TensorDict> lazy_softmax(const TensorDict& td, int64_t dim, std::optional<at::ScalarType> dtype,
                                       c10::function_ref<TensorDict(const TensorDict&)> leafwise);
TensorDict lazy_where(const TensorDict& td, const at::Tensor& condition, const Operand& other, const MissingKeys& missing);
TensorDict lazy_masked_fill(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value);
void lazy_masked_fill_(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value);
// lazy_update.cpp
void lazy_update(const TensorDict& td, const TensorDict& other);
void lazy_update_batch_size(const TensorDict& td, const TensorDict& other, const UpdateOptions& options,
                            c10::function_ref<void()> check_unlocked, c10::function_ref<void(bool refuse_options)> check_rebatch);
TensorDict lazy_update_into(const TensorDict& dest, const TensorDict& source);
// lazy_to_dict.cpp
void lazy_check_to_dict(const TensorDict& td);
// lazy_repeat.cpp
TensorDict lazy_repeat(const TensorDict& td, at::IntArrayRef repeats);
TensorDict lazy_repeat_interleave(const TensorDict& td, const at::Tensor& repeats, const at::Tensor& counts, int64_t dim);

// `other` cut along `lazy`'s stack dim, one part per member, for ops that go
// member by member: another lazy stack's own members when it stacks along
// the same dim (no copy, whatever their shapes), otherwise other.unbind().
// ValueError naming `op` when the counts differ.

}  // namespace tensordict::detail
